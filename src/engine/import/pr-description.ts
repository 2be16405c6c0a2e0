import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** Where GitHub looks for a repository's pull request template, in its order. */
const TEMPLATE_PLACES = ["", ".github", "docs"].flatMap((d) => ["pull_request_template.md", "PULL_REQUEST_TEMPLATE.md"].map((f) => (d ? `${d}/${f}` : f)));

/** The repository's pull request template(s) in an exported tree, joined; null when it has none. */
export function readPrTemplate(tree: string): string | null {
  const found = TEMPLATE_PLACES.filter((p) => existsSync(join(tree, p))).map((p) => readFileSync(join(tree, p), "utf8"));
  for (const dir of [".github/PULL_REQUEST_TEMPLATE", "PULL_REQUEST_TEMPLATE", "docs/PULL_REQUEST_TEMPLATE"]) {
    if (!existsSync(join(tree, dir))) continue;
    for (const f of readdirSync(join(tree, dir))) if (f.endsWith(".md")) found.push(readFileSync(join(tree, dir, f), "utf8"));
  }
  return found.length ? found.join("\n\n") : null;
}

const squash = (s: string) => s.replace(/\s+/g, " ").trim();
/**
 * Words only, lower case, on one line: GitHub re-wraps a squashed PR's description, and templates
 * change a little over time ("…is complex." in the PR, "…is complex, and list…" in today's template).
 */
const words = (s: string) => squash(s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, " "));
const heading = (line: string) => /^(#{1,6})\s+(.*)$/.exec(line);
/** Sections of a template that are the author's to-do list, never the change's description. */
const BOILERPLATE_SECTION = /checklist|before submitting|before you submit|pr checklist|contributor/i;
const CHECKBOX = /^\s*(?:[-*+]|\d+[.)])\s+\[[ xX]\]/;
const LIST_ITEM = /^\s*(?:[-*+]|\d+[.)])\s+/;

/** Blocks of text separated by blank lines, headings and fenced code kept as blocks of their own. */
function blocks(lines: string[]): string[][] {
  const out: string[][] = [];
  let cur: string[] = [];
  let fence = false;
  const flush = () => {
    if (cur.length) out.push(cur);
    cur = [];
  };
  for (const line of lines) {
    if (/^\s*(```|~~~)/.test(line)) {
      if (!fence) flush();
      cur.push(line);
      fence = !fence;
      if (!fence) flush();
      continue;
    }
    if (fence) cur.push(line);
    else if (!line.trim()) flush();
    else if (heading(line)) {
      flush();
      out.push([line]);
    } else cur.push(line);
  }
  flush();
  return out;
}

/**
 * A pull request's description without its template's boilerplate, for the prompt skeleton: drops
 * HTML comments, checkbox lists (and their wrapped lines), "Checklist"/"Before submitting"
 * sections, text copied unchanged from the repository's template (its guidance under each
 * heading), and headings left with nothing under them. The author's own prose stays.
 */
export function cleanPrDescription(text: string, template: string | null = null): string {
  const noComments = text.replace(/<!--[\s\S]*?(-->|$)/g, "");
  const tmpl = template ? ` ${words(template.replace(/<!--[\s\S]*?(-->|$)/g, ""))} ` : "";
  const kept: string[][] = [];
  let skipLevel = 0; // inside a boilerplate section of this heading level (0: not)
  for (const block of blocks(noComments.split("\n"))) {
    const h = heading(block[0] ?? "");
    if (h && block.length === 1) {
      const level = (h[1] ?? "").length;
      if (skipLevel && level > skipLevel) continue;
      skipLevel = BOILERPLATE_SECTION.test(h[2] ?? "") ? level : 0;
      if (!skipLevel) kept.push(block);
      continue;
    }
    if (skipLevel) continue;
    // A checkbox item runs on over the lines GitHub wrapped, up to the next list item.
    const lines: string[] = [];
    let inCheckbox = false;
    for (const line of block) {
      if (CHECKBOX.test(line)) inCheckbox = true;
      else if (LIST_ITEM.test(line) && !/^\s{2,}/.test(line)) inCheckbox = false;
      if (!inCheckbox) lines.push(line);
    }
    if (!lines.length) continue;
    // Guidance the template wrote under a heading ("> List the specific changes.") is no description.
    const body = words(lines.join("\n"));
    if (tmpl && body.length >= 12 && tmpl.includes(` ${body} `)) continue;
    kept.push(lines);
  }
  // A heading is empty when the next kept block is a heading of the same or a higher level (or none follows).
  const out: string[][] = [];
  for (let i = kept.length - 1; i >= 0; i--) {
    const block = kept[i] ?? [];
    const h = heading(block[0] ?? "");
    if (h && block.length === 1) {
      const next = out[0];
      const nh = next ? heading(next[0] ?? "") : null;
      if (!next || (nh && next.length === 1 && (nh[1] ?? "").length <= (h[1] ?? "").length)) continue;
    }
    out.unshift(block);
  }
  return out.map((b) => b.join("\n")).join("\n\n").trim();
}
