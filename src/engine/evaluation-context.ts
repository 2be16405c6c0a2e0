import { randomInt } from "node:crypto";
import type { OfficialResult } from "../core/result.js";
import type { ProbeCheck } from "../core/probe-outcome.js";
import { drawParams, type DrawnParams } from "../core/probe-params.js";
import type { TaskSpec } from "../core/task-spec.js";
import type { EvaluateOptions, EvaluationEvent } from "./evaluate.js";
import { HarnessError, InputError } from "./errors.js";
import { findControllers, type CgroupControllers } from "./sandbox/cgroup.js";
import { choosePython, detectGpus, inspectPython, type GpuInfo, type PythonInfo } from "./host.js";
import type { PlannedJob } from "./jobs/job-plan.js";
import type { SliceRunner } from "./jobs/job-slice.js";
import { readProbeSecrets, withholdLeaks, type ProbeSecrets } from "./leak-guard.js";
import { probeSetVersion } from "./probe-set.js";
import type { RunLimits } from "./run-command.js";
import { bwrapPath, detectSandbox, type SandboxSupport } from "./sandbox/sandbox.js";
import type { Workspace } from "./workspace.js";
import { ensureEnvironment, type BuiltEnvironment } from "./environment/build-environment.js";
import { environmentLabel, environmentRequest, treeEnvironmentRequest } from "./environment/task-request.js";
import { ensureTreeEnvironment } from "./environment/tree-environment.js";

/** Default processes per run: torch ranks run dozens of threads each, and a cgroup counts threads. */
export const DEFAULT_PROCESSES = 4096;
/** Default bytes a run may write (workspace, HOME, its private /tmp). */
export const DEFAULT_DISK_BYTES = 4 * 1024 ** 3;

/** Facts about the host being gathered (Python, GPUs, whether it can sandbox), and the bubblewrap they were checked with. */
export interface PendingHostFacts {
  bwrap: string;
  facts: Promise<readonly [PythonInfo, GpuInfo[], SandboxSupport | null]>;
  /**
   * The task's own environment (task.yml `environment:`), being built or found; its python is the
   * facts' Python. Null for a task without one, or when `--python` names the interpreter.
   */
  environment: Promise<BuiltEnvironment> | null;
  /**
   * For a gate whose environment follows its repository (`environment.fromTree`): starts that
   * environment once the workspace phase has exported the merge base; `environment` (and the
   * facts' Python) wait for it until then. Null for any other task.
   */
  followTree: ((ws: Pick<Workspace, "dir" | "prBase">) => void) | null;
}

/**
 * Starts reading the host's facts, so they are gathered while the workspace is built. A task that
 * declares a lock gets its environment built (or found in the runner's store) meanwhile, and its
 * python is the one inspected; a gate whose environment follows its repository gets it once the
 * workspace exists (`followTree`), as only then is its merge base's tree known. `--python`
 * (opts.python) overrides either, as an explicit choice for this run. A failure surfaces only when
 * they are awaited (in `setUpJobs`, evaluation-setup.ts), as a harness error of the evaluation.
 */
export function gatherHostFacts(opts: Pick<EvaluateOptions, "python" | "unsandboxed" | "task">, onProgress?: (line: string) => void): PendingHostFacts {
  const bwrap = bwrapPath();
  const declared = opts.task.spec.environment;
  if (opts.python && declared) onProgress?.(`not used: --python names the interpreter (${opts.python}), not the task's ${environmentLabel(declared)}`);
  const request = opts.python ? null : environmentRequest(opts.task);
  let followTree: PendingHostFacts["followTree"] = null;
  let environment: Promise<BuiltEnvironment> | null = request ? ensureEnvironment(request, { onProgress }) : null;
  if (!opts.python && declared?.fromTree) {
    let settle: { resolve: (env: Promise<BuiltEnvironment>) => void } = { resolve: () => {} };
    environment = new Promise<BuiltEnvironment>((resolve) => (settle = { resolve }));
    followTree = (ws) => settle.resolve(treeEnvironment(opts.task, ws, onProgress));
  }
  environment?.catch(() => {});
  const python = environment ? environment.then((env) => inspectPython(env.python)) : inspectPython(choosePython(opts.python));
  const facts = Promise.all([python, detectGpus(), opts.unsandboxed ? null : detectSandbox(bwrap)] as const);
  facts.catch(() => {});
  return { bwrap, facts, environment, followTree };
}

/** A gate's environment from its merge base's tree, the head's requirement changes noted in the progress lines. */
async function treeEnvironment(task: EvaluateOptions["task"], ws: Pick<Workspace, "dir" | "prBase">, onProgress?: (line: string) => void): Promise<BuiltEnvironment> {
  if (!ws.prBase) throw new HarnessError(`environment.fromTree needs the PR's merge base, and this workspace has none (${task.file})`, "environment");
  const request = treeEnvironmentRequest(task, { dir: ws.prBase.dir, label: `the merge base ${ws.prBase.mergeBase.slice(0, 12)}`, from: ws.prBase.mergeBase }, ws.dir);
  if (!request) throw new HarnessError(`task ${task.spec.id} has no environment.fromTree`, "environment");
  return ensureTreeEnvironment(request, { onProgress });
}

/**
 * The clock of one evaluation. The task's wall clock counts from the start, less the time spent
 * queued for the runner while none of this evaluation's jobs ran: on a shared runner, waiting for
 * another evaluation's jobs is not this submission's time.
 */
export class EvaluationClock {
  /** When the evaluation began, for the result's `startedAt`. */
  readonly startedAt: Date;
  /** performance.now() when it began; every duration and job record counts from here. */
  readonly t0: number;
  private queuedMs = 0;

  constructor(
    /** The wall clock (injectable for tests); read once at the start and once at the end. */
    readonly now: () => Date,
    private readonly wallClockS: number,
  ) {
    this.startedAt = now();
    this.t0 = performance.now();
  }

  /** Seconds since `t` (performance.now() time), the evaluation's start by default. */
  since(t = this.t0): number {
    return (performance.now() - t) / 1000;
  }

  /** Time queued with none of this evaluation's jobs running: it moves the deadline on by as much. */
  addQueued(ms: number): void {
    this.queuedMs += ms;
  }

  /** Seconds left of the task's wall clock now (negative once it is spent). */
  leftS(): number {
    return (this.t0 + this.queuedMs + this.wallClockS * 1000 - performance.now()) / 1000;
  }
}

/**
 * What the phases found and did, filled in as each runs. The result is assembled from this alone,
 * so a phase that ends in a harness error leaves what the earlier ones recorded (the Python found,
 * the job planned) in the result with verdict `error`.
 */
export interface EvaluationRecord {
  workspaceS: number;
  /** This runner's Python (with torch, CUDA) and GPUs; null where they could not be read. */
  host: { py: PythonInfo; gpus: GpuInfo[] } | null;
  /** The task's environment the jobs ran in (its lock's hash, base interpreter); null: the runner's Python. */
  pythonEnv: { lockHash: string; python: string; interpreter: string } | null;
  /** The official job as planned: its backend and ranks are the result's environment. */
  officialJob: PlannedJob | null;
  sandboxed: boolean;
  /** Runs the jobs and keeps their records (timeline, GPU peaks, GPU-seconds); null before any job was set up. */
  runner: SliceRunner | null;
  official: OfficialResult | null;
  officialS: number;
  checks: ProbeCheck[];
  /** A repository gate's weakened-test guard checks (structure), reported beside the probes' checks. */
  guard: ProbeCheck[];
  probesS: number;
  harnessError: { phase: string; message: string } | null;
  /** Gives the evaluation's sandbox uid slot back to the runner (null: none was claimed). */
  releaseUid: (() => void) | null;
}

/**
 * What the phases of one evaluation share: its inputs, clock, drawn parameters, leak-guarded event
 * sink, the host facts being gathered, and the record they fill in. One object handed from phase to
 * phase, so each phase is a function of it rather than of a dozen locals of `evaluate()`.
 */
export interface EvaluationContext {
  readonly opts: EvaluateOptions;
  readonly spec: TaskSpec;
  readonly clock: EvaluationClock;
  /** The probe set's version (hash of the probe folder), recorded in the result. */
  readonly probeSet: string;
  readonly params: DrawnParams;
  /** Probe source lines and canaries that no event or result may carry. */
  readonly secrets: ProbeSecrets;
  /** Sends an event to `opts.onEvent`, with probe source withheld (runner logs pass as they are: only --verbose shows them). */
  readonly emit: (e: EvaluationEvent) => void;
  readonly hostFacts: PendingHostFacts;
  readonly cgroups: CgroupControllers | null;
  /** Per-run limits the task file does not set. */
  readonly processes: number;
  readonly diskBytes: number;
  /** The evaluation folder, from the workspace phase on. */
  readonly ws: Workspace;
  readonly record: EvaluationRecord;
}

/**
 * Checks the options that can be checked before anything runs (InputError), starts the clock,
 * draws the probe parameters and starts gathering host facts, which run while the workspace is
 * built. Everything an evaluation needs but its workspace.
 */
export function openEvaluation(opts: EvaluateOptions): Omit<EvaluationContext, "ws"> {
  const spec = opts.task.spec;
  const clock = new EvaluationClock(opts.now ?? (() => new Date()), spec.limits.wallClock);
  if (opts.worldSize !== undefined && opts.worldSize < spec.minRanks) {
    throw new InputError(
      `--world-size ${opts.worldSize} is too few ranks for task ${spec.id}: it needs at least ${spec.minRanks} (minRanks in ${opts.task.dir}/task.yml). On fewer GPUs than that, leave --world-size out: the ranks then share a GPU or the CPU over gloo.`,
      { file: `${opts.task.dir}/task.yml`, field: "minRanks" },
    );
  }
  const probeSet = probeSetVersion(opts.task.probesDir);
  const params = drawParams(spec.params, opts.seed ?? randomInt(0, 2 ** 32));
  // Every string that leaves the runner (events, the result) is checked against the probe sources.
  const secrets = readProbeSecrets(opts.task.probesDir);
  const rawEmit = opts.onEvent ?? (() => {});
  const emit = (e: EvaluationEvent) => rawEmit(e.type === "log" ? e : withholdLeaks(e, secrets).value);
  return {
    opts,
    spec,
    clock,
    probeSet,
    params,
    secrets,
    emit,
    hostFacts: gatherHostFacts(opts, (text) => emit({ type: "log", source: "environment", text })),
    cgroups: findControllers(),
    processes: opts.runLimits?.processes ?? DEFAULT_PROCESSES,
    diskBytes: opts.runLimits?.diskBytes ?? DEFAULT_DISK_BYTES,
    record: { workspaceS: 0, host: null, pythonEnv: null, officialJob: null, sandboxed: false, runner: null, official: null, officialS: 0, checks: [], guard: [], probesS: 0, harnessError: null, releaseUid: null },
  };
}

/**
 * The limits of one run started now: its phase's timeout, cut to what is left of the task's wall
 * clock (at least a second), and killed when its job's GPUs go over the limit (each job has a meter
 * of its own).
 */
export function runLimits(ev: Pick<EvaluationContext, "spec" | "clock" | "processes" | "diskBytes">, timeoutS: number, gpuMemoryExceeded: () => boolean): RunLimits {
  return {
    gpuMemoryExceeded,
    timeoutS: Math.max(1, Math.min(timeoutS, ev.clock.leftS())),
    outputBytes: ev.spec.limits.outputBytes,
    memoryBytes: ev.spec.limits.memory,
    processes: ev.processes,
    diskBytes: ev.diskBytes,
  };
}
