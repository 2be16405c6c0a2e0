/** One `Name <email>` person from a commit trailer such as `Co-authored-by`. */
export interface TrailerPerson {
  name: string;
  email: string | null;
}

const TRAILER = /^([A-Za-z0-9][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*)$/;

/**
 * The trailers of a commit message, as git reads them: the lines of the last paragraph, when every
 * line there is `Key: value` (or an indented continuation). A `Co-authored-by:` quoted in the body
 * is prose, not a trailer, and does not count.
 */
export function parseTrailers(message: string): Array<{ key: string; value: string }> {
  const paragraphs = message.replace(/\r\n?/g, "\n").trim().split(/\n[ \t]*\n/);
  const last = paragraphs[paragraphs.length - 1] ?? "";
  // The subject line alone is never a trailer block.
  if (paragraphs.length < 2) return [];
  const out: Array<{ key: string; value: string }> = [];
  for (const line of last.split("\n")) {
    const prev = out[out.length - 1];
    if (/^[ \t]+\S/.test(line) && prev) {
      prev.value = `${prev.value} ${line.trim()}`;
      continue;
    }
    const m = TRAILER.exec(line);
    if (!m) return [];
    out.push({ key: m[1] ?? "", value: (m[2] ?? "").trim() });
  }
  return out;
}

/** The people named by `Co-authored-by` trailers (any case) of one commit message. */
export function coAuthors(message: string): TrailerPerson[] {
  return parseTrailers(message)
    .filter((t) => t.key.toLowerCase() === "co-authored-by")
    .map((t) => {
      const m = /^(.*?)\s*<([^<>]*)>\s*$/.exec(t.value);
      return m ? { name: (m[1] ?? "").trim(), email: (m[2] ?? "").trim() || null } : { name: t.value, email: null };
    });
}
