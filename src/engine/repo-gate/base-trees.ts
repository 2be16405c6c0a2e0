import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import picomatch from "picomatch";
import { copyFilter, SKIP_NAMES } from "../copy-filter.js";

/** Files pytest reads its configuration from, at the rootdir. */
export const PYTEST_CONFIG = ["pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"] as const;

/** Every file of a tree, relative and posix, leaving out version control and caches. */
export function treeFiles(dir: string, rel = ""): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
    if (SKIP_NAMES.has(e.name)) continue;
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...treeFiles(dir, p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/** A writable copy of a tree at `dest` (the base beside the workspace is read-only, and pytest writes where it runs). */
export function copyTree(src: string, dest: string): string {
  mkdirSync(dest, { recursive: true });
  cpSync(src, dest, { recursive: true, filter: copyFilter });
  return dest;
}

/** Whether a selected test (`tests/unit/`, `tests/test_a.py::test_x`) names a folder of `dir`. */
function selectsFolder(dir: string, test: string): string | null {
  const path = test.split("::")[0] ?? test;
  const full = join(dir, path);
  return existsSync(full) && statSync(full).isDirectory() ? path.replace(/\/+$/, "") : null;
}

/** What of the base a base-tests-on-head tree takes, and what of the head it drops; relative paths. */
export interface Overlay {
  restored: string[];
  removed: string[];
}

/**
 * The files that make "the base's tests": the base's files matching `official.files`, every
 * `conftest.py`, the pytest configuration at the root, the selected test files with the Python
 * files beside them (helpers, constants), and whole selected folders. Pure over two file lists;
 * `folders` are the selected tests that are folders at the base.
 */
export function planOverlay(o: { baseFiles: readonly string[]; headFiles: readonly string[]; watched: readonly string[]; selected: readonly string[]; folders: readonly string[] }): Overlay {
  const watched = o.watched.length ? picomatch([...o.watched], { dot: true }) : () => false;
  const selectedFiles = o.selected.map((t) => t.split("::")[0] ?? t).filter((p) => !o.folders.includes(p.replace(/\/+$/, "")));
  const besideSelected = new Set(selectedFiles.map((f) => posix.dirname(f)));
  const inFolder = (p: string) => o.folders.some((d) => p.startsWith(`${d}/`));
  const isConfig = (p: string) => (PYTEST_CONFIG as readonly string[]).includes(p);
  const isConftest = (p: string) => posix.basename(p) === "conftest.py";
  const takes = (p: string) => watched(p) || isConftest(p) || isConfig(p) || selectedFiles.includes(p) || inFolder(p) || (p.endsWith(".py") && besideSelected.has(posix.dirname(p)));
  const restored = o.baseFiles.filter(takes);
  const base = new Set(o.baseFiles);
  // What the head added of the same kinds goes: a new conftest.py or pytest configuration could
  // loosen the base's tests, and a selected folder runs every test file in it.
  const removed = o.headFiles.filter((p) => !base.has(p) && (isConftest(p) || isConfig(p) || inFolder(p)));
  return { restored, removed };
}

/**
 * The base's tests against the head's code: a copy of the head's tree (`headDir`, the workspace as
 * reset) at `dest` with the base's test files, conftest.py files and pytest configuration put back
 * (`planOverlay`). Returns what was restored and removed, for the log.
 */
export function baseTestsOnHead(o: { baseDir: string; headDir: string; dest: string; watched: readonly string[]; selected: readonly string[] }): Overlay {
  copyTree(o.headDir, o.dest);
  const folders = o.selected.map((t) => selectsFolder(o.baseDir, t)).filter((d): d is string => d !== null);
  const plan = planOverlay({ baseFiles: treeFiles(o.baseDir), headFiles: treeFiles(o.dest), watched: o.watched, selected: o.selected, folders });
  for (const p of plan.removed) rmSync(join(o.dest, p), { force: true });
  for (const p of plan.restored) {
    mkdirSync(dirname(join(o.dest, p)), { recursive: true });
    rmSync(join(o.dest, p), { force: true });
    cpSync(join(o.baseDir, p), join(o.dest, p));
  }
  return plan;
}
