import { relative, resolve } from "node:path";
import type { PythonEnvironment } from "../../core/task-environment.js";
import type { LoadedTask } from "../task-load.js";
import type { EnvironmentRequest } from "./build-environment.js";
import type { TreeEnvironmentRequest } from "./tree-environment.js";

/** A path as a person typed it: relative to the working folder when inside it. */
function asTyped(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith("..") ? rel : path;
}

/**
 * The environment a task declares (task.yml `environment:`) as a build request from its lock;
 * null for a task without one, which runs on the runner's interpreter, and for one whose
 * environment follows its repository (`fromTree`: see treeEnvironmentRequest). Paths in messages
 * are relative to the working folder, as a person typed them.
 */
export function environmentRequest(task: LoadedTask): EnvironmentRequest | null {
  const env = task.spec.environment;
  if (!env?.lock || env.fromTree) return null;
  const lockFile = resolve(task.dir, env.lock);
  return { lockFile, lockLabel: asTyped(lockFile), python: env.python, declaredIn: task.file };
}

/**
 * The build request of a gate whose environment follows its repository, once the tree to read is
 * known: the merge base the workspace exported (`tree.from` its SHA), or a folder given to `env
 * build --tree`. Null for a task without `environment.fromTree`.
 */
export function treeEnvironmentRequest(task: LoadedTask, tree: { dir: string; label: string; from: string }, headDir?: string): TreeEnvironmentRequest | null {
  const env = task.spec.environment;
  if (!env?.fromTree) return null;
  const lockFile = env.lock ? resolve(task.dir, env.lock) : null;
  return {
    treeDir: tree.dir,
    treeLabel: tree.label,
    from: tree.from,
    fromTree: env.fromTree,
    pinsLock: lockFile ? { file: lockFile, label: asTyped(lockFile) } : null,
    python: env.python,
    declaredIn: asTyped(task.file),
    headDir,
  };
}

/** How messages name a task's environment: its lock, or what of the repository it follows. */
export function environmentLabel(env: PythonEnvironment): string {
  if (!env.fromTree) return env.lock ?? "environment";
  const read = [...env.fromTree.requirements, ...(env.fromTree.pyproject ? [env.fromTree.pyproject.path] : [])];
  return `environment.fromTree: ${read.join(", ")}`;
}
