import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import type { IsolationPlan } from "../sandbox/job-isolation.js";

/** Operator settings that pass into jobs: NCCL/torch tuning, never credentials. */
const PASS_THROUGH = /^(NCCL_|TORCH_NCCL_|TORCH_SYMM_MEM_|NVSHMEM_|CUDA_LAUNCH_BLOCKING$|CUBLAS_WORKSPACE_CONFIG$|LD_LIBRARY_PATH$|OMP_NUM_THREADS$)/;

export interface JobContext {
  workspace: string;
  root: string;
  backend: "gloo" | "nccl";
  worldSize: number;
  /** GPU indices given to the job ("" = none). */
  cudaVisibleDevices: string;
  threadsPerRank: number;
  isolation: IsolationPlan;
  /** The job's own rendezvous port (MASTER_PORT): jobs packed side by side never meet on 29500. */
  port?: number;
  /** CPU ids the job is pinned to (empty or absent: not pinned). */
  cpus?: readonly number[];
  /** The task's setup files beside the workspace, first on PYTHONPATH (null or absent: none). */
  setupDir?: string | null;
  /**
   * The bin folder of the task's environment, first on PATH, as an activated venv has it: a test
   * that starts `python` or `torchrun` by name gets the environment's, not the system's.
   */
  envBin?: string;
}

/** PYTHONPATH of a job: the task's setup files first (the submission cannot shadow them), then the workspace, then `more`. */
export function jobPythonPath(ctx: JobContext, ...more: string[]): string {
  return [ctx.setupDir, ctx.workspace, ...more].filter((p): p is string => Boolean(p)).join(":");
}

/**
 * NVLink SHARP / multicast off in every job, the probes' included: multicast objects outlive a
 * killed process on some drivers and the fabric manager of a shared node may not grant them, which
 * turns a hostile or crashed run into the next job's hang. An operator's own value wins.
 */
export const NCCL_SAFE_DEFAULTS: Readonly<Record<string, string>> = {
  NCCL_NVLS_ENABLE: "0",
  TORCH_SYMM_MEM_DISABLE_MULTICAST: "1",
  NVSHMEM_DISABLE_NVLS: "1",
};

/**
 * The whole environment of an official-test or probe process, built from nothing: the runner's
 * variables (tokens, keys, GITHUB_*, ACTIONS_*, the signing key) never reach submission code.
 */
export function jobEnv(ctx: JobContext, extra: Record<string, string> = {}): Record<string, string> {
  const home = join(ctx.root, "home");
  const tmp = join(ctx.root, "tmp");
  mkdirSync(home, { recursive: true });
  mkdirSync(tmp, { recursive: true });
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && PASS_THROUGH.test(k)) env[k] = v;
  return {
    ...NCCL_SAFE_DEFAULTS,
    ...env,
    PATH: `${ctx.envBin ? `${ctx.envBin}:` : ""}/usr/local/bin:/usr/bin:/bin`,
    ...(ctx.envBin ? { VIRTUAL_ENV: dirname(ctx.envBin) } : {}),
    HOME: home,
    // In the sandbox /tmp is private (a size-limited tmpfs of each run's own).
    TMPDIR: ctx.isolation.sandbox ? "/tmp" : tmp,
    // A job's uid has no passwd entry (jobUid): getpass.getuser() and the caches keyed on it read these.
    USER: "probegate",
    LOGNAME: "probegate",
    LANG: "C.UTF-8",
    PYTHONDONTWRITEBYTECODE: "1",
    PYTHONUNBUFFERED: "1",
    PYTHONNOUSERSITE: "1",
    OMP_NUM_THREADS: env.OMP_NUM_THREADS ?? String(ctx.threadsPerRank),
    CUDA_VISIBLE_DEVICES: ctx.cudaVisibleDevices,
    PROBEGATE_WORKSPACE: ctx.workspace,
    PROBEGATE_BACKEND: ctx.backend,
    PROBEGATE_WORLD_SIZE: String(ctx.worldSize),
    PYTHONPATH: jobPythonPath(ctx),
    ...(ctx.port ? { MASTER_ADDR: "127.0.0.1", MASTER_PORT: String(ctx.port), PROBEGATE_RENDEZVOUS_PORT: String(ctx.port) } : {}),
    ...extra,
  };
}

/** Replaces `{python}`, `{junit}`, `{probe}`, `{workspace}` in a command; unknown placeholders stay as written. */
export function expandCommand(argv: readonly string[], values: Record<string, string>): string[] {
  return argv.map((a) => a.replace(/\{(\w+)\}/g, (m, k: string) => values[k] ?? m));
}
