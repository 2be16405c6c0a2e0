import { basename, extname } from "node:path";
import { unfitJobs, type JobDemand, type RunnerShape } from "../../core/packing.js";
import { categoryFromName } from "../../core/probe-outcome.js";
import type { TaskSpec } from "../../core/task-spec.js";
import { InputError } from "../errors.js";
import type { JobLease } from "./job-pool.js";
import type { IsolationPlan } from "../sandbox/job-isolation.js";
import type { JobContext } from "./job-env.js";
import type { LoadedTask } from "../task-load.js";

/** One job of an evaluation as planned before anything runs: what it needs and how its ranks talk. */
export interface PlannedJob {
  /** "official", or the probe's file stem. */
  name: string;
  kind: "official" | "probe";
  /** The probe file (probes only). */
  file?: string;
  ranks: number;
  backend: "gloo" | "nccl";
  demand: JobDemand;
}

/** Ranks when none are asked for: the task's GPUs, and never fewer than it can run on. */
export function defaultWorldSize(spec: TaskSpec): number {
  return Math.max(1, spec.gpus, spec.minRanks);
}

function planOne(
  spec: TaskSpec,
  shape: RunnerShape,
  o: { tag: string; name: string; kind: PlannedJob["kind"]; declared?: { gpus?: number; timing?: boolean; cores?: number; exclusive: boolean }; worldSize?: number },
): Omit<PlannedJob, "file"> {
  const d = o.declared;
  const ranks = o.worldSize ?? (d?.gpus !== undefined ? Math.max(1, d.gpus) : defaultWorldSize(spec));
  let gpus = 0;
  if (shape.gpus > 0) {
    // Declared GPUs are a requirement; the task-wide default falls back to gloo on one GPU.
    if (d?.gpus !== undefined) gpus = d.gpus === 0 ? 0 : ranks;
    else gpus = spec.gpus > 0 && shape.gpus >= ranks ? ranks : 1;
  }
  const backend = gpus > 0 && gpus >= ranks && (spec.gpus > 0 || (d?.gpus ?? 0) > 0) ? "nccl" : "gloo";
  // A GPU job is pinned to its share of the cores; with fewer cores than GPUs they are not partitioned.
  const perGpu = shape.gpus > 0 ? Math.floor(shape.cores / shape.gpus) : 0;
  const cores = gpus > 0 ? gpus * perGpu : Math.min(d?.cores ?? ranks, shape.cores);
  const timing = o.kind === "probe" && (d?.timing ?? categoryFromName(o.name) === "time");
  const exclusive = (d?.exclusive ?? false) || (timing && cores === 0);
  return { name: o.name, kind: o.kind, ranks, backend, demand: { id: `${o.tag}/${o.name}`, gpus, cores, timing, exclusive } };
}

/**
 * Every job of one evaluation (its official tests, each probe process) with what it needs of this
 * runner. Throws InputError before anything runs where a job can never fit, or where task.yml
 * declares a job for a probe file that does not exist.
 */
export function planJobs(task: LoadedTask, probeFiles: readonly string[], shape: RunnerShape, o: { tag: string; worldSize?: number }): { official: PlannedJob; probes: PlannedJob[] } {
  const spec = task.spec;
  const stems = probeFiles.map((f) => basename(f, extname(f)));
  const unknown = Object.keys(spec.probes.jobs).filter((k) => !stems.includes(k));
  if (unknown.length) {
    throw new InputError(`${task.file}: probes.jobs: ${unknown.map((k) => `'${k}'`).join(", ")} ${unknown.length === 1 ? "is" : "are"} not a probe file of ${task.probesDir} (matching '${spec.probes.pattern}'); name each job by its file without the extension, e.g. ${stems[0] ?? "probe_time"}.`, {
      file: task.file,
      field: "probes.jobs",
    });
  }
  const official = { ...planOne(spec, shape, { tag: o.tag, name: "official", kind: "official", worldSize: o.worldSize }) };
  const probes = probeFiles.map((file, i) => ({
    ...planOne(spec, shape, { tag: o.tag, name: stems[i] as string, kind: "probe", declared: spec.probes.jobs[stems[i] as string], worldSize: o.worldSize }),
    file,
  }));
  const unfit = unfitJobs([official, ...probes].map((j) => j.demand), shape);
  if (unfit.length) {
    throw new InputError(
      `task ${spec.id} cannot run on this runner: ${unfit.map((u) => u.replace(`${o.tag}/`, "")).join("; ")}. Give it more GPUs (--gpus), or lower probes.jobs.<probe>.gpus in ${task.file}.`,
      { file: task.file, field: "probes.jobs" },
    );
  }
  return { official, probes };
}

/** What every job of one evaluation shares: its folders, the runner's cores, and how to sandbox a job on given GPUs. */
export interface JobBase {
  workspace: string;
  root: string;
  /** The task's setup folder beside the workspace (null: none). */
  setupDir: string | null;
  totalCores: number;
  isolation: (gpus: number[]) => IsolationPlan;
  /** The bin folder of the task's environment (task.yml `environment:`), first on PATH; absent: none. */
  envBin?: string;
}

/** The environment facts of one job on the slice it was given. */
export function jobContextFor(
  base: JobBase,
  job: PlannedJob,
  lease: Pick<JobLease, "gpus" | "cores" | "port">,
): JobContext {
  const cores = lease.cores.length || (job.demand.gpus > 0 ? 1 : base.totalCores);
  return {
    workspace: base.workspace,
    root: base.root,
    backend: job.backend,
    worldSize: job.ranks,
    cudaVisibleDevices: lease.gpus.join(","),
    threadsPerRank: Math.max(1, Math.floor(cores / job.ranks)),
    isolation: base.isolation(lease.gpus),
    port: lease.port,
    cpus: lease.cores,
    setupDir: base.setupDir,
    envBin: base.envBin,
  };
}
