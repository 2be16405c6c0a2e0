import { accessSync, constants, readdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { inVersionRange } from "../../core/task-environment.js";

/** A system interpreter an environment can be built on. */
export interface BaseInterpreter {
  /** The path the venv is made from (/usr/bin/python3.11). */
  path: string;
  /** Its full version (3.11.2). */
  version: string;
}

/**
 * Folders searched for python3.N, in order of preference. /usr/bin first: the sandbox's user must
 * read the base interpreter, and one under /root (pyenv's) is closed to it.
 */
const SYSTEM_DIRS = ["/usr/bin", "/usr/local/bin"];

function executable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** python3.N files of `dir`, the highest minor version first. */
function pythonsIn(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => /^python3\.\d+$/.test(n))
    .sort((a, b) => Number(b.slice(8)) - Number(a.slice(8)))
    .map((n) => join(dir, n))
    .filter(executable);
}

/**
 * Candidate base interpreters, most preferred first: `$PROBEGATE_ENV_PYTHONS` (colon-separated
 * paths, for a runner whose interpreters live elsewhere), then /usr/bin and /usr/local/bin, then
 * python3.N on PATH (last: pyenv's and the like may be closed to the sandbox's user). Duplicates
 * (the same file by two names) are dropped.
 */
export function candidateInterpreters(env: NodeJS.ProcessEnv = process.env): string[] {
  const explicit = (env.PROBEGATE_ENV_PYTHONS ?? "").split(":").filter(Boolean);
  const system = SYSTEM_DIRS.flatMap(pythonsIn);
  const onPath = (env.PATH ?? "").split(":").filter((d) => d && !SYSTEM_DIRS.includes(d)).flatMap(pythonsIn);
  const seen = new Set<string>();
  const out: string[] = [];
  for (const p of [...explicit, ...system, ...onPath]) {
    let real: string;
    try {
      real = realpathSync(p);
    } catch {
      continue;
    }
    if (seen.has(real)) continue;
    seen.add(real);
    out.push(p);
  }
  return out;
}

const versions = new Map<string, Promise<string | null>>();

/** The interpreter's full version, null where it does not run (cached per process). */
export function interpreterVersion(path: string): Promise<string | null> {
  let v = versions.get(path);
  if (!v) {
    v = execa(path, ["-I", "-c", "import platform; print(platform.python_version())"], { reject: false, timeout: 30_000 }).then((r) =>
      r.exitCode === 0 && /^\d+\.\d+\.\d+/.test(String(r.stdout).trim()) ? String(r.stdout).trim() : null,
    );
    versions.set(path, v);
  }
  return v;
}

/**
 * The first candidate whose version is in `range`, with what was seen (for the error when none is).
 * Candidates are probed in order of preference, so a later one runs only when no earlier one fits.
 */
export async function chooseInterpreter(range: string, candidates = candidateInterpreters()): Promise<{ chosen: BaseInterpreter | null; seen: string[] }> {
  const seen: string[] = [];
  for (const path of candidates) {
    const version = await interpreterVersion(path);
    if (version === null) continue;
    if (inVersionRange(version, range)) return { chosen: { path, version }, seen };
    seen.push(`${path} (${version})`);
  }
  return { chosen: null, seen };
}
