import { cpSync, existsSync, readdirSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import type { TaskSetup } from "../core/task-environment.js";
import { copyFilter, SKIP_NAMES } from "./copy-filter.js";
import { InputError } from "./errors.js";
import { lineOf, type YamlSource } from "./yaml-file.js";


function filesUnder(root: string, dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => !SKIP_NAMES.has(e.name))
    .flatMap((e) => (e.isDirectory() ? filesUnder(root, join(dir, e.name)) : [relative(root, join(dir, e.name))]));
}

/**
 * The folders of a task's `setup:`, resolved against the task folder: its own `path`, then each of
 * `include` (a shim several tasks share). Checked here, each naming file, field and line: every
 * folder exists, no file is in two of them (which one would win is no guess to leave to a copy),
 * and every `pytestPlugins` module is in one of them.
 */
export function setupFolders(setup: TaskSetup, dir: string, file: string, src: YamlSource): string[] {
  const at = (path: PropertyKey[]) => {
    const line = lineOf(src, path);
    return { where: `${file}${line ? `:${line}` : ""}`, line };
  };
  const fields: Array<{ field: string; path: PropertyKey[]; folder: string }> = [
    { field: "setup.path", path: ["setup", "path"], folder: resolve(dir, setup.path) },
    ...setup.include.map((p, i) => ({ field: `setup.include[${i}]`, path: ["setup", "include", i], folder: resolve(dir, p) })),
  ];
  const owner = new Map<string, string>();
  for (const f of fields) {
    const { where, line } = at(f.path);
    if (!existsSync(f.folder) || !statSync(f.folder).isDirectory()) throw new InputError(`${where}: ${f.field}: folder ${f.folder} does not exist.`, { file, field: f.field, line });
    for (const rel of filesUnder(f.folder)) {
      const first = owner.get(rel);
      if (first) throw new InputError(`${where}: ${f.field}: ${rel} is in both ${first} and ${f.folder}; a setup file may come from one folder only.`, { file, field: f.field, line });
      owner.set(rel, f.folder);
    }
  }
  const folders = fields.map((f) => f.folder);
  for (const [i, plugin] of setup.pytestPlugins.entries()) {
    const rel = plugin.split(".").join("/");
    if (!folders.some((d) => existsSync(join(d, `${rel}.py`)) || existsSync(join(d, rel, "__init__.py")))) {
      const { where, line } = at(["setup", "pytestPlugins", i]);
      throw new InputError(`${where}: setup.pytestPlugins: module '${plugin}' is not in ${folders.join(" or ")} (no ${rel}.py or ${rel}/__init__.py).`, { file, field: "setup.pytestPlugins", line });
    }
  }
  return folders;
}

/** Copies a task's setup folders into one folder (`into`), as the jobs see them. */
export function copySetupFolders(folders: readonly string[], into: string): void {
  for (const f of folders) cpSync(f, into, { recursive: true, filter: copyFilter });
}
