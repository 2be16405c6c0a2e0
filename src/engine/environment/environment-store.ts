import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { EnvironmentManifestSchema, type EnvironmentManifest } from "../../core/task-environment.js";

/** The file that marks a folder of the store as a complete environment. */
export const MANIFEST = "probegate-env.json";

/**
 * Where built environments live: `$PROBEGATE_ENV_DIR`, else /var/cache/probegate/envs. Not under
 * /root or $HOME: the sandbox's unprivileged users must read (and so reach) every environment.
 */
export function environmentRoot(env: NodeJS.ProcessEnv = process.env): string {
  return env.PROBEGATE_ENV_DIR || "/var/cache/probegate/envs";
}

/**
 * The folder name of an environment: the lock's content hash (16 hex digits are plenty among one
 * runner's locks; the manifest keeps all 64) and the base interpreter's version, since a venv runs
 * only on the interpreter it was made with.
 */
export function environmentKey(lockHash: string, pythonVersion: string): string {
  return `${lockHash.slice(0, 16)}-py${pythonVersion}`;
}

/** The manifest of the environment in `dir`, or null where it is not a complete one. */
export function readManifest(dir: string): EnvironmentManifest | null {
  const file = join(dir, MANIFEST);
  if (!existsSync(file)) return null;
  try {
    const parsed = EnvironmentManifestSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** One complete environment of the store. */
export interface StoredEnvironment {
  dir: string;
  python: string;
  manifest: EnvironmentManifest;
}

/** Every complete environment under `root`, by folder name; builds in progress (dot folders) are left out. */
export function listEnvironments(root = environmentRoot()): StoredEnvironment[] {
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return [];
  }
  return names
    .filter((n) => !n.startsWith("."))
    .sort()
    .flatMap((n) => {
      const dir = join(root, n);
      const manifest = readManifest(dir);
      return manifest ? [{ dir, python: join(dir, "bin", "python"), manifest }] : [];
    });
}
