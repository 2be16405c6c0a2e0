import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { normalizePackage } from "../core/task-environment.js";
import { TaskSpecSchema, type TaskSpec } from "../core/task-spec.js";
import { locatedProblems, parseLock } from "./environment/lock-file.js";
import { InputError } from "./errors.js";
import { setupFolders } from "./setup-folders.js";
import { lineOf, parseWith, readYaml } from "./yaml-file.js";

/** A task spec with its paths resolved against the task folder. */
export interface LoadedTask {
  spec: TaskSpec;
  dir: string;
  file: string;
  promptFile: string;
  /**
   * The base as a folder, a git repository and ref to export it from (assignments), or the PR's
   * own base commit, given with each evaluation (repository gates).
   */
  base: { kind: "folder"; path: string } | { kind: "git"; repo: string; ref: string; overlay: string | null } | { kind: "pr" };
  probesDir: string;
  /** The task's `setup:` folders, its own first, then those it includes (none without `setup:`). */
  setupDirs: string[];
}

function mustExist(path: string, kind: "file" | "dir", file: string, field: string, line: number | undefined): void {
  const ok = existsSync(path) && (kind === "dir" ? statSync(path).isDirectory() : statSync(path).isFile());
  if (!ok) {
    throw new InputError(`${file}${line ? `:${line}` : ""}: ${field}: ${kind === "dir" ? "folder" : "file"} ${path} does not exist.`, { file, field, line });
  }
}

/**
 * Loads `<dir>/task.yml`. `probesOverride` replaces `probes.path` (a deployment keeps probes in a
 * private checkout). Throws InputError naming file, field and line for anything wrong.
 */
export function loadTask(dirOrFile: string, probesOverride?: string): LoadedTask {
  const file = resolve(dirOrFile.endsWith(".yml") || dirOrFile.endsWith(".yaml") ? dirOrFile : join(dirOrFile, "task.yml"));
  const dir = resolve(file, "..");
  const src = readYaml(file, "task spec");
  const spec = parseWith(src, TaskSpecSchema, "task spec");
  if (spec.id !== basename(dir)) {
    const line = lineOf(src, ["id"]);
    throw new InputError(`${file}${line ? `:${line}` : ""}: id: '${spec.id}' must equal the task's folder name '${basename(dir)}'.`, { file, field: "id", line });
  }
  const promptFile = resolve(dir, spec.prompt);
  mustExist(promptFile, "file", file, "prompt", lineOf(src, ["prompt"]));
  let base: LoadedTask["base"];
  if ("path" in spec.base) {
    const path = resolve(dir, spec.base.path);
    mustExist(path, "dir", file, "base.path", lineOf(src, ["base", "path"]));
    base = { kind: "folder", path };
  } else if ("pr" in spec.base) {
    base = { kind: "pr" };
  } else {
    const repo = /^[a-z]+:\/\//.test(spec.base.git.repo) ? spec.base.git.repo : resolve(dir, spec.base.git.repo);
    let overlay: string | null = null;
    if (spec.base.overlay) {
      overlay = resolve(dir, spec.base.overlay);
      mustExist(overlay, "dir", file, "base.overlay", lineOf(src, ["base", "overlay"]));
    }
    base = { kind: "git", repo, ref: spec.base.git.ref, overlay };
  }
  const probesDir = probesOverride ? resolve(probesOverride) : resolve(dir, spec.probes.path);
  if (probesOverride) {
    if (!existsSync(probesDir) || !statSync(probesDir).isDirectory()) {
      throw new InputError(`--probes: folder ${probesDir} does not exist.`, { field: "--probes" });
    }
  } else {
    mustExist(probesDir, "dir", file, "probes.path", lineOf(src, ["probes", "path"]));
  }
  const setupDirs = spec.setup ? setupFolders(spec.setup, dir, file, src) : [];
  if (spec.environment?.lock) {
    const lockFile = resolve(dir, spec.environment.lock);
    mustExist(lockFile, "file", file, "environment.lock", lineOf(src, ["environment", "lock"]));
    // What uv would refuse with less to go on (an unpinned or unhashed line) is bad input, found
    // here: `probegate validate` reports it before any runner builds anything.
    const { problems, requirements } = parseLock(readFileSync(lockFile, "utf8"));
    if (problems.length) {
      throw new InputError(`not a lock the engine can build (environment.lock in ${file}): ${locatedProblems(lockFile, problems).join("; ")}.`, { file: lockFile, field: "environment.lock" });
    }
    const excluded = new Set((spec.environment.fromTree?.exclude ?? []).map(normalizePackage));
    const both = requirements.find((r) => excluded.has(normalizePackage(r.name)));
    if (both) {
      const line = lineOf(src, ["environment", "fromTree", "exclude"]);
      throw new InputError(`${file}${line ? `:${line}` : ""}: environment.fromTree.exclude: ${both.name} is pinned by the task's lock (${lockFile}:${both.line}): a package is either pinned by the task or never installed.`, { file, field: "environment.fromTree.exclude", line });
    }
  }
  return { spec, dir, file, promptFile, base, probesDir, setupDirs };
}
