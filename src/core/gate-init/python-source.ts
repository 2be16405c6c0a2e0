/**
 * Python source read as statements, without running or importing it: enough for `gate init` to find
 * imports and top-level definitions. A statement spans the physical lines its brackets, triple-quoted
 * strings and backslashes join; comments are gone, strings are kept as written (a default value is
 * part of a signature), and `;` splits statements on one line.
 */

/** One statement: where it starts, its indentation (columns) and its text on one line. */
export interface Statement {
  line: number;
  indent: number;
  text: string;
}

const OPEN = new Set(["(", "[", "{"]);
const CLOSE = new Set([")", "]", "}"]);

/** The statements of `source`, in order. Unterminated strings or brackets end at the end of the file. */
export function statements(source: string): Statement[] {
  const out: Statement[] = [];
  let text = "";
  let depth = 0;
  let start = 1;
  let indent = 0;
  let line = 1;
  let atLineStart = true;
  let col = 0;
  const flush = () => {
    const t = text.replace(/\s+/g, " ").trim();
    if (t) out.push({ line: start, indent, text: t });
    text = "";
  };
  for (let i = 0; i < source.length; i++) {
    const c = source[i] as string;
    if (atLineStart) {
      if (c === " " || c === "\t") {
        col += c === "\t" ? 8 - (col % 8) : 1;
        continue;
      }
      if (c === "#") i = skipComment(source, i) - 1; // a comment line: its newline comes next
      else if (c === "\n") {
        line++;
        col = 0;
      } else if (c !== "\r" && c !== "\f") {
        atLineStart = false;
        start = line;
        indent = col;
      }
      if (atLineStart) continue;
    }
    if (c === "#") {
      i = skipComment(source, i);
      i--; // the newline is handled below
      continue;
    }
    if (c === "'" || c === '"') {
      const end = stringEnd(source, i);
      const body = source.slice(i, end);
      for (const ch of body) if (ch === "\n") line++;
      text += body;
      i = end - 1;
      continue;
    }
    if (c === "\\" && source[i + 1] === "\n") {
      i++;
      line++;
      text += " ";
      continue;
    }
    if (OPEN.has(c)) depth++;
    else if (CLOSE.has(c)) depth = Math.max(0, depth - 1);
    if (c === "\n") {
      line++;
      if (depth === 0) {
        flush();
        atLineStart = true;
        col = 0;
      } else text += " ";
      continue;
    }
    if (c === ";" && depth === 0) {
      flush();
      start = line;
      continue;
    }
    text += c;
  }
  flush();
  return out;
}

/** The index of the newline that ends the comment starting at `i` (or the end of the file). */
function skipComment(source: string, i: number): number {
  const nl = source.indexOf("\n", i);
  return nl === -1 ? source.length : nl;
}

/** The index just past the string literal whose opening quote is at `i` (a backslash escapes the next character, raw strings too). */
function stringEnd(source: string, i: number): number {
  const q = source[i] as string;
  const triple = source.startsWith(q.repeat(3), i);
  let j = i + (triple ? 3 : 1);
  while (j < source.length) {
    const c = source[j];
    if (c === "\\") {
      j += 2;
      continue;
    }
    if (triple ? source.startsWith(q.repeat(3), j) : c === q) return j + (triple ? 3 : 1);
    if (!triple && c === "\n") return j; // an unterminated one-line string ends with its line
    j++;
  }
  return source.length;
}
