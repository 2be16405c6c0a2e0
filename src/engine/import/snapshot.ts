import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import picomatch from "picomatch";
import { InputError } from "../errors.js";
import { choosePython } from "../host.js";
import { PACKAGE_ROOT } from "../package-paths.js";
import type { PrImportRequest } from "./types.js";

/** Every file under `dir`, relative, with '/' separators. */
export function walk(dir: string, rel = "", out: string[] = []): string[] {
  for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) walk(dir, p, out);
    else out.push(p);
  }
  return out;
}

/**
 * Paths of the base a pruned snapshot keeps: the change's files and its tests (those the base
 * has), what --keep names, and with --trace-imports the Python files they import from the tree.
 */
export async function snapshotPaths(req: PrImportRequest, all: readonly string[], baseTree: string, changed: string[], progress: (line: string) => void): Promise<string[]> {
  const keep = new Set(changed.filter((p) => all.includes(p)));
  if (req.keep.length) {
    const isKept = picomatch(req.keep, { dot: true });
    const matched = all.filter((p) => isKept(p));
    if (matched.length === 0) throw new InputError(`--keep: no file of the base matches ${req.keep.join(", ")}.`, { field: "--keep" });
    for (const p of matched) keep.add(p);
  }
  if (req.traceImports) {
    const entries = [...keep].filter((p) => p.endsWith(".py"));
    const r = await execa(choosePython(req.python), [join(PACKAGE_ROOT, "scripts", "import_closure.py"), baseTree, ...entries], { reject: false });
    if (r.exitCode !== 0) throw new InputError(`--trace-imports: the import trace failed: ${String(r.stderr).trim().split("\n").pop()}`);
    const traced = String(r.stdout).split("\n").filter(Boolean);
    progress(`import trace: ${traced.length} Python files of the base are imported by the change and its tests`);
    for (const p of traced) keep.add(p);
  }
  return [...keep].sort();
}

/** Copies `paths` (those `from` has) into the folder `to`, keeping modes. */
export async function copyPaths(from: string, to: string, paths: Iterable<string>): Promise<void> {
  for (const p of new Set(paths)) {
    if (!existsSync(join(from, p))) continue;
    mkdirSync(join(to, p, ".."), { recursive: true });
    await execa("cp", ["-p", join(from, p), join(to, p)]);
  }
}

/**
 * The files of the whole tree a missing module could be: `a.b` → a/b.py or a/b/__init__.py, under
 * the root or a src/ layout. Empty when the repository has no such file (the runner lacks a package).
 */
export function moduleFiles(tree: string, dotted: string): string[] {
  const rel = dotted.split(".").join("/");
  return [`${rel}.py`, `${rel}/__init__.py`, `src/${rel}.py`, `src/${rel}/__init__.py`].filter((p) => existsSync(join(tree, p)));
}
