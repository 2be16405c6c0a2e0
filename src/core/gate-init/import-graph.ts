/**
 * A repository's static import graph: which of its Python files each file imports, read from the
 * source (`import a.b`, `from a.b import c`, relative imports; `ImportEdges` says whether the
 * packages run on the way count). Imports anywhere in a file count, function bodies included: a test
 * that imports the code it tests inside the test (or inside the rank function it spawns) still tests
 * it. Pure.
 */
import { statements } from "./python-source.js";

/** One import statement's target: `from ..a.b import c, d` is level 2, module "a.b", names [c, d]. */
export interface ImportRef {
  line: number;
  level: number;
  module: string;
  names: string[];
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const DOTTED = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** The imports of one file's source, in order. */
export function importsOf(source: string): ImportRef[] {
  const out: ImportRef[] = [];
  for (const st of statements(source)) {
    // `try: import x`, `if not re: import re`, `else: from y import z` on one line
    const text = st.text.replace(/^(?:try|else|finally|(?:el)?if\b.*?|except\b.*?|with\b.*?)\s*:\s*(?=(?:import|from)\s)/, "");
    let m = /^import\s+(.+)$/.exec(text);
    if (m) {
      for (const part of (m[1] as string).split(",")) {
        const module = part.trim().split(/\s+as\s+/)[0]?.trim() ?? "";
        if (DOTTED.test(module)) out.push({ line: st.line, level: 0, module, names: [] });
      }
      continue;
    }
    m = /^from\s*(\.*)\s*([A-Za-z_][\w.]*)?\s+import\s+(.+)$/.exec(text);
    if (!m) continue;
    const module = m[2] ?? "";
    if (module && !DOTTED.test(module)) continue;
    const names = (m[3] as string)
      .replace(/[()]/g, "")
      .split(",")
      .map((n) => n.trim().split(/\s+as\s+/)[0]?.trim() ?? "")
      .filter((n) => NAME.test(n));
    out.push({ line: st.line, level: (m[1] as string).length, module, names });
  }
  return out;
}

/** The Python files of a tree, and the folders that hold any (for namespace packages). */
export class PythonTree {
  readonly files: ReadonlySet<string>;
  private readonly dirs = new Set<string>();

  constructor(paths: Iterable<string>) {
    this.files = new Set([...paths].filter((p) => p.endsWith(".py")));
    for (const f of this.files) {
      const parts = f.split("/");
      for (let i = 1; i < parts.length; i++) this.dirs.add(parts.slice(0, i).join("/"));
    }
  }

  /** The file that module path `rel` (a/b, under some folder) is: a/b.py or a/b/__init__.py; null for none. */
  moduleFile(rel: string): string | null {
    if (this.files.has(`${rel}.py`)) return `${rel}.py`;
    if (this.files.has(`${rel}/__init__.py`)) return `${rel}/__init__.py`;
    return null;
  }

  isDir(rel: string): boolean {
    return rel === "" || this.dirs.has(rel);
  }
}

const join = (dir: string, rel: string) => (dir ? `${dir}/${rel}` : rel);
const dirOf = (file: string) => file.split("/").slice(0, -1).join("/");

/**
 * How imports become edges. "uses" (the default): an import is an edge to what it names — the module
 * (`import a.b.c`, `from a.b.c import x`: a/b/c.py) and submodules named in a from-import; a name taken
 * from a package (`from a.b import x`, a/b/__init__.py) is an edge to the module its `__init__.py`
 * re-exports it from, and to the `__init__.py` itself only when it defines the name (or re-exports it
 * through `*`). The packages run on the way are not edges: importing `a.b.timer` runs `a/b/__init__.py`,
 * which may import every module of the package, but a test that uses only the timer does not test
 * them. "runs": every package's `__init__.py` on the way is an edge too (what the interpreter runs).
 */
export type ImportEdges = "uses" | "runs";

/** Resolves names through a package `__init__.py`: the files that define them, or null where one is not a plain re-export. */
type Exports = (init: string, names: readonly string[]) => string[] | null;

/**
 * The files an absolute import of `dotted` from `root` is an edge to (`edges`, above), plus `names`
 * that are submodules. Empty when `root` holds no such module.
 */
function fromRoot(tree: PythonTree, root: string, dotted: string, names: readonly string[], edges: ImportEdges, exports: Exports): string[] {
  const parts = dotted.split(".");
  const first = join(root, parts[0] as string);
  if (!tree.moduleFile(first) && !tree.isDir(first)) return [];
  const out: string[] = [];
  let rel = root;
  let last: string | null = null;
  for (const p of parts) {
    rel = join(rel, p);
    const f = tree.moduleFile(rel);
    if (f) {
      if (edges === "runs") out.push(f);
      last = f;
    } else if (!tree.isDir(rel)) return edges === "runs" || !last ? out : [last];
  }
  const plain: string[] = [];
  for (const n of names) {
    const f = tree.moduleFile(join(rel, n));
    if (f) out.push(f);
    else plain.push(n);
  }
  const target = tree.moduleFile(rel);
  if (edges === "uses" && target && (plain.length > 0 || names.length === 0)) {
    const via = target.endsWith("__init__.py") && plain.length > 0 ? exports(target, plain) : null;
    out.push(...(via ?? [target]));
  }
  return out;
}

/**
 * The repository files one import of `file` is an edge to. Absolute imports are looked up under
 * `roots` in order (the folders on sys.path: the repository's root, src/, pytest's rootdir
 * insertions); a relative one from the file's own folder.
 */
export function resolveImport(tree: PythonTree, file: string, ref: ImportRef, roots: readonly string[], edges: ImportEdges = "runs", exports: Exports = () => null): string[] {
  if (ref.level === 0) {
    for (const root of roots) {
      const found = fromRoot(tree, root, ref.module, ref.names, edges, exports);
      if (found.length) return found;
    }
    return [];
  }
  let dir = dirOf(file);
  for (let i = 1; i < ref.level; i++) dir = dirOf(dir);
  if (!ref.module) {
    const subs = ref.names.map((n) => tree.moduleFile(join(dir, n)));
    const plain = ref.names.filter((_, i) => !subs[i]);
    const init = tree.moduleFile(dir);
    const named = plain.length && init && edges === "uses" && init !== file ? (exports(init, plain) ?? [init]) : [];
    return [...subs.filter((f): f is string => f !== null), ...named];
  }
  return fromRoot(tree, dir, ref.module, ref.names, edges, exports);
}

/** file → the repository files it imports (directly). */
export type ImportGraph = Map<string, Set<string>>;

/** The import graph of `sources` (path → source text); imports of modules outside the tree are left out. */
export function importGraph(sources: ReadonlyMap<string, string>, roots: readonly string[], edges: ImportEdges = "uses"): ImportGraph {
  const tree = new PythonTree(sources.keys());
  const refs = new Map([...sources].map(([file, text]) => [file, importsOf(text)] as const));
  const exports = (init: string, names: readonly string[], seen = new Set<string>()): string[] | null => {
    if (seen.has(init)) return null;
    seen.add(init);
    const found = new Set<string>();
    for (const name of names) {
      const ref = (refs.get(init) ?? []).find((r) => r.module !== "" && r.names.includes(name));
      if (!ref) return null; // defined in the __init__ itself, bound by `*` or by an assignment: the package is the edge
      const files = resolveImport(tree, init, { ...ref, names: [name] }, roots, edges, (i, n) => exports(i, n, seen));
      if (files.length === 0) return null;
      for (const f of files) found.add(f);
    }
    return [...found];
  };
  const graph: ImportGraph = new Map();
  for (const [file, list] of refs) {
    const out = new Set<string>();
    for (const ref of list) for (const f of resolveImport(tree, file, ref, roots, edges, exports)) if (f !== file) out.add(f);
    graph.set(file, out);
  }
  return graph;
}

/** Every file reachable from `from`, each with the file that first led to it (null for `from`): a breadth-first walk. */
export function reachable(graph: ImportGraph, from: string): Map<string, string | null> {
  const parent = new Map<string, string | null>([[from, null]]);
  const queue = [from];
  while (queue.length) {
    const f = queue.shift() as string;
    for (const g of [...(graph.get(f) ?? [])].sort()) {
      if (parent.has(g)) continue;
      parent.set(g, f);
      queue.push(g);
    }
  }
  return parent;
}

/** The shortest import chain from the walk's start to `to` ([start, …, to]); empty when `to` was not reached. */
export function chainTo(parents: ReadonlyMap<string, string | null>, to: string): string[] {
  if (!parents.has(to)) return [];
  const chain = [to];
  for (let p = parents.get(to); p; p = parents.get(p)) chain.unshift(p);
  return chain;
}
