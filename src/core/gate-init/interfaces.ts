/**
 * The public interface of a Python module, read statically for a gate's prompt: its top-level
 * functions and classes whose names do not start with `_`, each with its signature as written
 * (annotations and defaults kept, comments and line breaks gone), and each class's public methods
 * (`__init__` and `__call__` included). Pure; nothing is imported.
 */
import { statements, type Statement } from "./python-source.js";

export interface PublicDef {
  kind: "function" | "class";
  name: string;
  line: number;
  /** `def f(a, b: int = 2) -> int`, `async def g(x)`, `class C(Base)` */
  signature: string;
  decorators: string[];
  /** A class's public methods, in order (empty for a function). */
  methods: PublicDef[];
}

const DEF = /^(async\s+def|def)\s+([A-Za-z_][A-Za-z0-9_]*)\s*/;
const CLASS = /^class\s+([A-Za-z_][A-Za-z0-9_]*)\s*/;

/** The index just past the bracket that closes the one at `open` (strings skipped); text.length when unclosed. */
function closing(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      // statements() kept strings whole; a quote inside another kind of quote is rare in a header
      i = end === -1 ? text.length : end;
      continue;
    }
    if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return text.length;
}

/** The header of a def or class statement, up to (not including) the colon that opens its body. */
function header(text: string, nameEnd: number): string {
  let i = nameEnd;
  while (text[i] === " ") i++;
  if (text[i] === "[") i = closing(text, i); // PEP 695 type parameters
  while (text[i] === " ") i++;
  if (text[i] === "(") i = closing(text, i);
  const rest = text.slice(i);
  const colon = rest.search(/:/);
  const tail = colon === -1 ? rest : rest.slice(0, colon);
  // a return annotation may hold a colon inside brackets (Callable[[int], int] has none; dict[str, int] none): rare enough to cut there
  return (text.slice(0, i) + tail).replace(/\s+/g, " ").replace(/\( /g, "(").replace(/ \)/g, ")").replace(/,\s*\)/g, ")").trim();
}

const isPublic = (name: string) => !name.startsWith("_") || name === "__init__" || name === "__call__";

function defOf(st: Statement, decorators: string[]): PublicDef | null {
  const d = DEF.exec(st.text);
  if (d) return { kind: "function", name: d[2] as string, line: st.line, signature: header(st.text, d[0].trimEnd().length), decorators, methods: [] };
  const c = CLASS.exec(st.text);
  if (c) return { kind: "class", name: c[1] as string, line: st.line, signature: header(st.text, c[0].trimEnd().length), decorators, methods: [] };
  return null;
}

/** The public top-level functions and classes of `source`, in order. */
export function publicInterface(source: string): PublicDef[] {
  const all = statements(source);
  const out: PublicDef[] = [];
  let decorators: string[] = [];
  for (let i = 0; i < all.length; i++) {
    const st = all[i] as Statement;
    if (st.indent !== 0) continue;
    if (st.text.startsWith("@")) {
      decorators.push(st.text.slice(1).trim());
      continue;
    }
    const def = defOf(st, decorators);
    decorators = [];
    if (!def || !isPublic(def.name) || def.name.startsWith("__")) continue;
    if (def.kind === "class") def.methods = methodsOf(all, i);
    out.push(def);
  }
  return out;
}

/** The public methods of the class whose statement is all[at]: the defs one level into its body. */
function methodsOf(all: readonly Statement[], at: number): PublicDef[] {
  const classIndent = (all[at] as Statement).indent;
  const bodyIndent = all[at + 1] && (all[at + 1] as Statement).indent > classIndent ? (all[at + 1] as Statement).indent : null;
  if (bodyIndent === null) return [];
  const out: PublicDef[] = [];
  let decorators: string[] = [];
  for (let i = at + 1; i < all.length && (all[i] as Statement).indent > classIndent; i++) {
    const st = all[i] as Statement;
    if (st.indent !== bodyIndent) continue;
    if (st.text.startsWith("@")) {
      decorators.push(st.text.slice(1).trim());
      continue;
    }
    const def = defOf(st, decorators);
    decorators = [];
    if (def && def.kind === "function" && isPublic(def.name)) out.push(def);
  }
  return out;
}
