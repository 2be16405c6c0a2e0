/** One file a unified diff changes, with the post-image lines it adds or modifies. */
export interface ChangedLines {
  /** Path in the post-image (`+++ b/<path>`), relative to the repository root. */
  path: string;
  /** 1-based line numbers, in the post-image, of the lines the diff adds (`+` lines), ascending. */
  lines: number[];
}

function unquote(raw: string): string {
  const name = raw.trim().replace(/\t.*$/, "");
  // git quotes paths with unusual characters: "b/a\tb.py".
  return name.startsWith('"') ? (JSON.parse(name) as string) : name;
}

/**
 * The added lines of each file a unified diff (git's or plain `diff -u`) leaves in place: for each
 * hunk, the `+` lines counted from its `@@ -a,b +c,d @@` post-image start. A deleted file
 * (`+++ /dev/null`) has none and is left out; a modified line is a `-` line and a `+` line, so it
 * is counted once, as added. Throws on a hunk header it cannot read, naming its line in the patch.
 */
export function addedLines(patch: string): ChangedLines[] {
  const out: ChangedLines[] = [];
  let current: ChangedLines | null = null;
  let next = 0;
  let remainingNew = 0;
  let remainingOld = 0;
  const text = patch.split("\n");
  text.forEach((line, i) => {
    if (remainingNew > 0 || remainingOld > 0) {
      if (line.startsWith("+")) {
        current?.lines.push(next);
        next++;
        remainingNew--;
        return;
      }
      if (line.startsWith("-")) {
        remainingOld--;
        return;
      }
      if (line.startsWith(" ") || line === "") {
        next++;
        remainingNew--;
        remainingOld--;
        return;
      }
      if (line.startsWith("\\")) return; // "\ No newline at end of file"
    }
    if (line.startsWith("+++ ")) {
      const name = unquote(line.slice(4));
      current = name === "/dev/null" ? null : { path: name.replace(/^b\//, ""), lines: [] };
      if (current) out.push(current);
      return;
    }
    if (line.startsWith("@@")) {
      const m = /^@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(line);
      if (!m) throw new Error(`line ${i + 1}: cannot read the hunk header '${line.slice(0, 60)}'`);
      remainingOld = m[1] === undefined ? 1 : Number(m[1]);
      next = Number(m[2]);
      remainingNew = m[3] === undefined ? 1 : Number(m[3]);
    }
  });
  return out.filter((f) => f.lines.length > 0);
}
