import { randomBytes } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { execa } from "execa";
import type { EnvironmentManifest, TreeSource } from "../../core/task-environment.js";
import { RunnerClaims } from "../claims/runner-claims.js";
import { HarnessError } from "../errors.js";
import { inspectPython } from "../host.js";
import { treeBytes } from "../sandbox/disk-usage.js";
import { chooseInterpreter, type BaseInterpreter } from "./interpreter.js";
import { locatedProblems, lockHash, parseLock, requirementNamedIn, uvErrorSummary, type ParsedLock } from "./lock-file.js";
import { environmentKey, environmentRoot, MANIFEST, readManifest } from "./environment-store.js";
import { findUv, runUv, uvVersion } from "./uv.js";

/** What to build: a lock file and the interpreter range it is for, as a task declares them. */
export interface EnvironmentRequest {
  /** Absolute path of the lock. */
  lockFile: string;
  /** How errors name the lock (the task's relative path, e.g. tasks/x/environment/requirements.lock). */
  lockLabel: string;
  /** The interpreter range (environment.python). */
  python: string;
  /** Where the range is declared, for the error when no interpreter fits it. */
  declaredIn: string;
}

/** An environment ready to run: its folder, its python, what it holds, and whether this call built it. */
export interface BuiltEnvironment {
  dir: string;
  /** `{python}`: the venv's bin/python. */
  python: string;
  manifest: EnvironmentManifest;
  /** True when it was already built (by an earlier call, another process or evaluation). */
  reused: boolean;
  /** Seconds this call took (building, or waiting for another builder, or looking). */
  seconds: number;
}

export interface EnsureOptions {
  /** The store (default `environmentRoot()`). */
  root?: string;
  /** Phase lines for a person waiting ("building …", uv's summary lines). */
  onProgress?: (line: string) => void;
  /** Longest a uv command may run (default 1800 s: a cold cache downloads GBs). */
  timeoutS?: number;
  /** How often a process waiting for another's build looks again (ms). */
  pollMs?: number;
  /** The pid its runner claim names (default: this process's); tests give two builders distinct live identities. */
  claimant?: number;
}

/** Builds of this process in flight, by folder: evaluations side by side share one. */
const inFlight = new Map<string, Promise<BuiltEnvironment>>();

/** A lock ready to install: its file, bytes and parse, and what the manifest records of where it came from. */
export interface PreparedLock {
  file: string;
  bytes: Buffer;
  lock: ParsedLock;
  /** Where a compiled lock came from (recorded in the manifest); absent: the task's own lock. */
  tree?: TreeSource;
  /** Files copied into the environment's `probegate-lock/` folder, for a person tracing it (the compiled lock and its inputs). */
  keep?: string[];
}

/** How a build gets the lock it installs: the task's file as it is, or one compiled when (and only when) the environment must be built. */
export interface LockSource {
  /** How phase lines, errors and the manifest name it. */
  label: string;
  /** The lock, made in `scratch` (an empty folder of the build's) if need be; called holding the build's claim. */
  prepare(scratch: string, progress: (line: string) => void): Promise<PreparedLock>;
}

/**
 * The environment of `req`, built once per runner: found in the store when built before, else
 * built under a runner claim (`env-<key>` in `<root>/.claims`) so two processes never build one
 * at once; the second waits for the first and reuses its build. A lock uv cannot install ends in
 * a HarnessError (phase "environment") naming the package and its line in the lock.
 */
export async function ensureEnvironment(req: EnvironmentRequest, opts: EnsureOptions = {}): Promise<BuiltEnvironment> {
  const t0 = performance.now();
  let bytes: Buffer;
  try {
    bytes = readFileSync(req.lockFile);
  } catch (e) {
    throw new HarnessError(`cannot read the environment lock ${req.lockLabel} (${(e as NodeJS.ErrnoException).code ?? String(e)})`, "environment");
  }
  const lock = parseLock(bytes.toString("utf8"));
  if (lock.problems.length) {
    throw new HarnessError(`the environment lock ${req.lockLabel} cannot be built: ${locatedProblems(req.lockLabel, lock.problems).join("; ")}`, "environment");
  }
  const base = await chooseBase(req.python, req.declaredIn);
  const source: LockSource = { label: req.lockLabel, prepare: async () => ({ file: req.lockFile, bytes, lock }) };
  const got = await obtainEnvironment(environmentKey(lockHash(bytes), base.version), source, base, opts);
  return { ...got, seconds: (performance.now() - t0) / 1000 };
}

/** The system interpreter an environment is built on: the first in `range`, else a HarnessError naming the range, where it is declared and what was found. */
export async function chooseBase(range: string, declaredIn: string): Promise<BaseInterpreter> {
  const { chosen, seen } = await chooseInterpreter(range);
  if (chosen) return chosen;
  throw new HarnessError(
    `no system interpreter matches python: "${range}" (environment.python in ${declaredIn}); found ${seen.length ? seen.join(", ") : "no python3.N in /usr/bin, /usr/local/bin or on PATH"}. Install one in the range (e.g. apt-get install python3.X), list it in PROBEGATE_ENV_PYTHONS, or widen the range.`,
    "environment",
  );
}

/**
 * The environment of folder `name` in the store: found, awaited from another builder, or built
 * from `source` on `base` (evaluations of this process side by side share one build).
 */
export function obtainEnvironment(name: string, source: LockSource, base: BaseInterpreter, opts: EnsureOptions = {}): Promise<BuiltEnvironment> {
  const root = opts.root ?? environmentRoot();
  const dir = join(root, name);
  const claimant = opts.claimant ?? process.pid;
  const memo = `${dir}\0${claimant}`;
  let pending = inFlight.get(memo);
  if (!pending) {
    pending = obtain({ source, base, root, dir, progress: opts.onProgress ?? (() => {}), timeoutS: opts.timeoutS ?? 1800, pollMs: opts.pollMs ?? 500, claimant });
    inFlight.set(memo, pending);
    pending.then(
      () => inFlight.delete(memo),
      () => inFlight.delete(memo),
    );
  }
  return pending;
}

interface Job {
  source: LockSource;
  base: BaseInterpreter;
  root: string;
  dir: string;
  progress: (line: string) => void;
  timeoutS: number;
  pollMs: number;
  claimant: number;
}

function found(dir: string): BuiltEnvironment | null {
  const manifest = readManifest(dir);
  return manifest ? { dir, python: join(dir, "bin", "python"), manifest, reused: true, seconds: 0 } : null;
}

async function obtain(job: Job): Promise<BuiltEnvironment> {
  const ready = found(job.dir);
  if (ready) return ready;
  // World-searchable: the sandbox's users reach the environments through it.
  try {
    mkdirSync(job.root, { recursive: true, mode: 0o755 });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    throw new HarnessError(
      `cannot make the environment store ${job.root} (${code}). Create it (sudo install -d -m 0755 -o "$USER" ${job.root}) or set PROBEGATE_ENV_DIR to a folder this user can write and everyone can read.`,
      "environment",
    );
  }
  const claims = new RunnerClaims(join(job.root, ".claims"), { pid: job.claimant });
  const key = `env-${job.dir.slice(job.root.length + 1)}`;
  let announced = false;
  for (;;) {
    if (claims.claim(key)) {
      try {
        return found(job.dir) ?? (await build(job));
      } finally {
        claims.release(key);
      }
    }
    if (!announced) {
      const holder = claims.holders([key]).get(key);
      job.progress(`waiting for process ${holder ?? "?"}, which is building this environment`);
      announced = true;
    }
    await new Promise((r) => setTimeout(r, job.pollMs));
    const built = found(job.dir);
    if (built) return built;
  }
}

/** Builds into a dot folder beside the final one, then renames it into place: never seen half built. */
async function build(job: Job): Promise<BuiltEnvironment> {
  const { source, base, root, dir, progress } = job;
  const t0 = performance.now();
  const uv = findUv();
  const name = dir.slice(root.length + 1);
  // Holding the claim, any build folder of this key is a dead builder's; a folder of the final name
  // reaches here only without a valid manifest: a broken leftover.
  for (const n of readdirSync(root)) if (n.startsWith(`.build-${name}-`) || n === name) await removeTree(join(root, n));
  const tmp = join(root, `.build-${name}-${process.pid}-${randomBytes(3).toString("hex")}`);
  const scratch = `${tmp}.lock`;
  try {
    mkdirSync(scratch);
    const prepared = await source.prepare(scratch, progress);
    progress(`building environment ${name} from ${source.label}: ${prepared.lock.requirements.length} pinned packages on ${base.path} (${base.version})`);
    // Relocatable: its scripts (pytest, torchrun) find their python by their own path, so the
    // folder still works after the rename into place.
    const venv = await runUv(uv, ["venv", "--relocatable", "--python", base.path, tmp], progress, job.timeoutS);
    if (venv.exitCode !== 0) throw new HarnessError(`uv venv could not make a virtual environment on ${base.path}: ${uvErrorSummary(venv.stderr)}`, "environment");
    progress("installing the lock (uv pip sync --require-hashes --compile-bytecode)");
    // Bytecode now, once: the sandbox mounts the environment read-only, so a process can only
    // read `__pycache__`, and without it each rank would compile torch's sources at every start.
    const sync = await runUv(uv, ["pip", "sync", "--require-hashes", "--compile-bytecode", "--python", join(tmp, "bin", "python"), prepared.file], progress, job.timeoutS);
    if (sync.exitCode !== 0) throw lockFailure(source.label, prepared.lock, sync.stderr);
    if (prepared.keep?.length) {
      mkdirSync(join(tmp, "probegate-lock"));
      for (const f of prepared.keep) copyFileSync(f, join(tmp, "probegate-lock", basename(f)));
    }
    const py = await inspectPython(join(tmp, "bin", "python"));
    const manifest: EnvironmentManifest = {
      lockHash: lockHash(prepared.bytes),
      lockFile: source.label,
      interpreter: base.path,
      python: py.python,
      torch: py.torch,
      cuda: py.cuda,
      uv: await uvVersion(uv),
      builtAt: new Date().toISOString(),
      buildS: Math.round((performance.now() - t0) / 100) / 10,
      sizeBytes: treeBytes([tmp]),
      packages: countDistributions(tmp),
      bytecode: true,
      ...(prepared.tree ? { tree: prepared.tree } : {}),
    };
    writeFileSync(join(tmp, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
    // Read-only for everyone, readable by everyone: the sandbox's users run it, none may change it.
    const ro = await execa("chmod", ["-R", "a-w,a+rX", tmp], { reject: false });
    if (ro.exitCode !== 0) throw new HarnessError(`could not make the environment read-only: ${String(ro.stderr).trim()}`, "environment");
    renameSync(tmp, dir);
    progress(`built ${name} in ${manifest.buildS} s: python ${manifest.python}, torch ${manifest.torch ?? "none"}, ${(manifest.sizeBytes / 2 ** 20).toFixed(0)} MiB`);
    return { dir, python: join(dir, "bin", "python"), manifest, reused: false, seconds: 0 };
  } finally {
    await removeTree(tmp);
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Removes a (possibly read-only) tree. */
async function removeTree(path: string): Promise<void> {
  if (!existsSync(path)) return;
  await execa("chmod", ["-R", "u+w", path], { reject: false });
  rmSync(path, { recursive: true, force: true });
}

/** The error of a lock uv could not install: the package uv names, its line in the lock, uv's reason. */
function lockFailure(label: string, lock: ParsedLock, stderr: string): HarnessError {
  const req = requirementNamedIn(stderr, lock.requirements);
  const where = req ? `${label}:${req.line} (${req.name}${req.version ? `==${req.version}` : ""})` : label;
  return new HarnessError(
    `the environment lock ${where} could not be installed: ${uvErrorSummary(stderr)}. Fix the lock (recompile it: uv pip compile --universal --generate-hashes); no test or probe was run.`,
    "environment",
  );
}

/** Installed distributions (their .dist-info folders) in the venv's site-packages. */
function countDistributions(venv: string): number {
  const lib = join(venv, "lib");
  let n = 0;
  for (const py of existsSync(lib) ? readdirSync(lib) : []) {
    const site = join(lib, py, "site-packages");
    if (existsSync(site)) n += readdirSync(site).filter((f) => f.endsWith(".dist-info")).length;
  }
  return n;
}
