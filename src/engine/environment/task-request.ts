import { relative, resolve } from "node:path";
import type { LoadedTask } from "../task-load.js";
import type { EnvironmentRequest } from "./build-environment.js";

/**
 * The environment a task declares (task.yml `environment:`), as a build request; null for a task
 * without one, which runs on the runner's interpreter. Paths in messages are relative to the
 * working folder, as a person typed them.
 */
export function environmentRequest(task: LoadedTask): EnvironmentRequest | null {
  const env = task.spec.environment;
  if (!env) return null;
  const lockFile = resolve(task.dir, env.lock);
  const rel = relative(process.cwd(), lockFile);
  return {
    lockFile,
    lockLabel: rel && !rel.startsWith("..") ? rel : lockFile,
    python: env.python,
    declaredIn: task.file,
  };
}
