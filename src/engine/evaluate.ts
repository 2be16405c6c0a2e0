import { randomInt } from "node:crypto";
import { cpus, platform, arch } from "node:os";
import { drawParams } from "../core/probe-params.js";
import { EvaluationResultSchema, RESULT_SCHEMA_VERSION, type EvaluationResult, type OfficialResult, type ProbeResult } from "../core/result.js";
import type { ProbeCheck } from "../core/probe-outcome.js";
import { formatBytes } from "../core/sizes.js";
import { decideVerdict } from "../core/verdict.js";
import { unmetRequirements } from "../core/task-environment.js";
import type { LoadedTask } from "./task-load.js";
import { describeSubmission, type SubmissionSource } from "./submission.js";
import { HarnessError, InputError } from "./errors.js";
import { choosePython, detectGpus, inspectPython, type GpuInfo, type PythonInfo } from "./host.js";
import { findControllers } from "./cgroup.js";
import { planIsolation, type IsolationPlan } from "./job-isolation.js";
import { readProbeSecrets, withholdLeaks } from "./leak-guard.js";
import { runOfficial } from "./official-phase.js";
import { runProbes } from "./probe-phase.js";
import { probeSetVersion } from "./probe-set.js";
import { bwrapPath, detectSandbox } from "./sandbox.js";
import { startGpuMeter, type GpuMemoryPeak, type GpuMeter } from "./gpu-meter.js";
import { signResult } from "./sign.js";
import { createWorkspace, resetHooks, type Workspace } from "./workspace.js";
import type { JobContext } from "./job-env.js";

export type Phase = "workspace" | "official" | "probes" | "verdict";

/** Progress of one evaluation, for the CLI's phase lines and the Action's log groups. */
export type EvaluationEvent =
  | { type: "phase-start"; phase: Phase; detail?: string }
  | { type: "phase-end"; phase: Phase; durationS: number; detail?: string }
  | { type: "probe-start"; probe: string; attempt: number }
  | { type: "probe-end"; probe: string; checks: readonly ProbeCheck[] }
  | { type: "log"; source: string; text: string };

export interface EvaluateOptions {
  task: LoadedTask;
  submission: SubmissionSource;
  /** Folder of the Python probe kit (`probegate_probe`). */
  kitDir: string;
  python?: string;
  /** Ranks to use; default: the task's GPU count (at least 1). */
  worldSize?: number;
  /** GPUs this job may use (indices); default: every GPU nvidia-smi reports. */
  gpus?: number[];
  /** Run the probes even when the official tests fail. */
  alwaysProbe?: boolean;
  /**
   * Run submission code without the sandbox. Without it, an evaluation on a machine that cannot
   * sandbox (no bubblewrap, no user namespaces) ends in `error` instead of running untrusted code.
   */
  unsandboxed?: boolean;
  /** Per-run limits the task file does not set: processes (threads count too) and disk bytes. */
  runLimits?: { processes?: number; diskBytes?: number };
  signingKey?: string;
  /** The app's evaluation key, recorded in the (signed) result. */
  evaluationKey?: string;
  keepWorkspace?: boolean;
  /** Seed of the probe parameters (task.yml `params`); default: drawn fresh. The result records it. */
  seed?: number;
  onEvent?: (e: EvaluationEvent) => void;
  /** Wall clock, injectable for tests. */
  now?: () => Date;
}

/** Default processes per run: torch ranks run dozens of threads each, and a cgroup counts threads. */
export const DEFAULT_PROCESSES = 4096;
/** Default bytes a run may write (workspace, HOME, its private /tmp). */
export const DEFAULT_DISK_BYTES = 4 * 1024 ** 3;

function jobContext(ws: Workspace, opts: EvaluateOptions, gpus: GpuInfo[], isolation: (gpus: number[]) => IsolationPlan): JobContext & { judgeDir: string } {
  const worldSize = opts.worldSize ?? defaultWorldSize(opts.task.spec);
  const usable = opts.gpus ? gpus.filter((g) => opts.gpus?.includes(g.index)) : gpus;
  const nccl = opts.task.spec.gpus > 0 && usable.length >= worldSize;
  const assigned = nccl ? usable.slice(0, worldSize) : usable.slice(0, Math.min(1, usable.length));
  return {
    isolation: isolation(assigned.map((g) => g.index)),
    workspace: ws.dir,
    root: ws.root,
    judgeDir: ws.judgeDir,
    backend: nccl ? "nccl" : "gloo",
    worldSize,
    cudaVisibleDevices: assigned.map((g) => g.index).join(","),
    threadsPerRank: Math.max(1, Math.floor(cpus().length / worldSize)),
    setupDir: ws.setupDir,
  };
}

/** Ranks when none are asked for: the task's GPUs, and never fewer than it can run on. */
function defaultWorldSize(spec: LoadedTask["spec"]): number {
  return Math.max(1, spec.gpus, spec.minRanks);
}

/** The GPUs given to the job (CUDA_VISIBLE_DEVICES), as nvidia-smi numbers them. */
function jobGpus(ctx: { cudaVisibleDevices: string }): number[] {
  return ctx.cudaVisibleDevices ? ctx.cudaVisibleDevices.split(",").map(Number) : [];
}

/** ", GPU peak 1.2 GiB" for a phase's progress line; nothing where no GPU was measured. */
function gpuNote(peak: GpuMemoryPeak | null): string {
  return peak ? `, GPU peak ${formatBytes(peak.peakBytes)}` : "";
}

/** The result's `gpuMemory`: null for a job without GPUs, or where no phase could read them. */
function gpuMemoryOfRecord(gpus: number[], peaks: { official: GpuMemoryPeak | null; probes: GpuMemoryPeak | null }): EvaluationResult["gpuMemory"] {
  if (gpus.length === 0 || (!peaks.official && !peaks.probes)) return null;
  const phase = (p: GpuMemoryPeak | null) => (p ? { baselineBytes: p.baselineBytes, peakBytes: p.peakBytes, samples: p.samples } : null);
  return { source: "nvidia-smi", gpus, official: phase(peaks.official), probes: phase(peaks.probes) };
}

function toProbeResults(checks: readonly ProbeCheck[]): ProbeResult[] {
  const counts = new Map<string, number>();
  for (const c of checks) counts.set(c.id, (counts.get(c.id) ?? 0) + 1);
  return checks.map((c) => ({
    id: c.id,
    category: c.category,
    status: (counts.get(c.id) ?? 0) > 1 ? "error" : c.status,
    message: (counts.get(c.id) ?? 0) > 1 ? `check id '${c.id}' is reported by more than one probe process` : c.message,
    location: c.location ?? null,
    measured: c.measured ?? null,
    requirements: c.requirements ?? null,
    probe: c.probe,
    attempts: c.attempts,
    durationS: c.durationS,
  }));
}

/**
 * One evaluation on this machine: workspace, official tests, hidden probes, verdict. Bad input
 * throws InputError before anything runs; a harness fault ends in a result with verdict `error`.
 */
export async function evaluate(opts: EvaluateOptions): Promise<EvaluationResult> {
  const now = opts.now ?? (() => new Date());
  const startedAt = now();
  const t0 = performance.now();
  const since = (t: number) => (performance.now() - t) / 1000;
  const spec = opts.task.spec;
  if (opts.worldSize !== undefined && opts.worldSize < spec.minRanks) {
    throw new InputError(
      `--world-size ${opts.worldSize} is too few ranks for task ${spec.id}: it needs at least ${spec.minRanks} (minRanks in ${opts.task.dir}/task.yml). On fewer GPUs than that, leave --world-size out: the ranks then share a GPU or the CPU over gloo.`,
      { file: `${opts.task.dir}/task.yml`, field: "minRanks" },
    );
  }
  const deadline = t0 + spec.limits.wallClock * 1000;
  const processes = opts.runLimits?.processes ?? DEFAULT_PROCESSES;
  const diskBytes = opts.runLimits?.diskBytes ?? DEFAULT_DISK_BYTES;
  // The GPU meter of the phase running now; a run is killed when the job's GPUs go over the limit.
  let phaseGpu: GpuMeter | null = null;
  const limits = (timeoutS: number) => ({
    gpuMemoryExceeded: () => phaseGpu?.overLimit() ?? false,
    timeoutS: Math.max(1, Math.min(timeoutS, (deadline - performance.now()) / 1000)),
    outputBytes: spec.limits.outputBytes,
    memoryBytes: spec.limits.memory,
    processes,
    diskBytes,
  });
  const probeSet = probeSetVersion(opts.task.probesDir);
  const params = drawParams(spec.params, opts.seed ?? randomInt(0, 2 ** 32));
  // Every string that leaves the runner (events, the result) is checked against the probe sources.
  const secrets = readProbeSecrets(opts.task.probesDir);
  const rawEmit = opts.onEvent ?? (() => {});
  const emit = (e: EvaluationEvent) => rawEmit(e.type === "log" ? e : withholdLeaks(e, secrets).value);
  // Facts about the host are gathered while the workspace is built; a failure surfaces later, as a harness error.
  const bwrap = bwrapPath();
  const hostFacts = Promise.all([inspectPython(choosePython(opts.python)), detectGpus(), opts.unsandboxed ? null : detectSandbox(bwrap)] as const);
  hostFacts.catch(() => {});

  emit({ type: "phase-start", phase: "workspace", detail: describeSubmission(opts.submission) });
  const ws = await createWorkspace(opts.task, opts.submission);
  const workspaceS = since(t0);
  emit({ type: "phase-end", phase: "workspace", durationS: workspaceS, detail: ws.resets.length ? `${ws.resets.length} judge files reset` : undefined });

  let official: OfficialResult | null = null;
  let checks: ProbeCheck[] = [];
  let harnessError: { phase: string; message: string } | null = null;
  let officialS = 0;
  let probesS = 0;
  let py: PythonInfo | null = null;
  let gpus: GpuInfo[] = [];
  let ctx: ReturnType<typeof jobContext> | null = null;
  const cgroups = findControllers();
  const gpuPeaks: { official: GpuMemoryPeak | null; probes: GpuMemoryPeak | null } = { official: null, probes: null };
  try {
    let support;
    [py, gpus, support] = await hostFacts;
    if (support && !support.ok) {
      throw new HarnessError(`refusing to run submission code unsandboxed: ${support.why}. Install bubblewrap, or pass --unsandboxed (Action input 'unsandboxed') to run it anyway; the result will say it ran unsandboxed.`, "sandbox");
    }
    const usableGpus = opts.gpus ? gpus.filter((g) => opts.gpus?.includes(g.index)).length : gpus.length;
    const unmet = unmetRequirements(spec.requires, { torch: py.torch, cuda: py.cuda, gpus: usableGpus });
    if (unmet.length) {
      throw new HarnessError(`the runner lacks what task ${spec.id} requires (requires in ${opts.task.file}): ${unmet.join("; ")}. Run it on a runner that has it; no test or probe was run.`, "requires");
    }
    const python = py.executable;
    const plan = planIsolation({ support, bwrap, interpreterDirs: py.prefixes, evaluationRoot: ws.root, cgroups, processes, diskBytes });
    ctx = jobContext(ws, opts, gpus, plan);
    const c = ctx;
    emit({ type: "phase-start", phase: "official", detail: `${c.backend} × ${c.worldSize}` });
    const t1 = performance.now();
    phaseGpu = await startGpuMeter(jobGpus(c), { limitBytes: spec.limits.gpuMemory });
    try {
      official = await runOfficial(opts.task, { ...c, python }, limits(spec.official.timeout), (text) => emit({ type: "log", source: "official", text }));
    } finally {
      gpuPeaks.official = await phaseGpu.stop();
      phaseGpu = null;
    }
    officialS = since(t1);
    emit({ type: "phase-end", phase: "official", durationS: officialS, detail: (official.passed ? `${official.counts.passed} passed` : (official.reason ?? "failed")) + gpuNote(gpuPeaks.official) });
    if (official.passed || opts.alwaysProbe) {
      // Hooks the official run may have planted for the probe processes (a sitecustomize.py, say) go first.
      ws.resets.push(...(await resetHooks(ws)));
      emit({ type: "phase-start", phase: "probes" });
      const t2 = performance.now();
      phaseGpu = await startGpuMeter(jobGpus(c), { limitBytes: spec.limits.gpuMemory });
      try {
        checks = await runProbes(opts.task, { ...c, python, kitDir: opts.kitDir, params }, () => limits(spec.probes.timeout), {
          probeStart: (probe, attempt) => emit({ type: "probe-start", probe, attempt }),
          probeEnd: (probe, cs) => emit({ type: "probe-end", probe, checks: cs }),
          log: (probe, text) => emit({ type: "log", source: `probe ${probe}`, text }),
        });
      } finally {
        gpuPeaks.probes = await phaseGpu.stop();
        phaseGpu = null;
      }
      probesS = since(t2);
      const failed = checks.filter((x) => x.status === "failed").length;
      emit({ type: "phase-end", phase: "probes", durationS: probesS, detail: `${checks.length - failed} of ${checks.length} passed${gpuNote(gpuPeaks.probes)}` });
    }
  } catch (e) {
    if (!(e instanceof HarnessError)) {
      ws.dispose();
      throw e;
    }
    harnessError = { phase: e.phase, message: e.message };
  } finally {
    if (!opts.keepWorkspace) ws.dispose();
  }

  emit({ type: "phase-start", phase: "verdict" });
  const probes = toProbeResults(checks);
  const { verdict, reason } = decideVerdict({ harnessError: harnessError?.message, official, probes });
  const gpuCount = ctx?.cudaVisibleDevices ? ctx.cudaVisibleDevices.split(",").length : 0;
  const result: EvaluationResult = EvaluationResultSchema.parse({
    schemaVersion: RESULT_SCHEMA_VERSION,
    task: { id: spec.id, title: spec.title, area: spec.area, probeSet },
    submission: {
      kind: opts.submission.kind,
      source: describeSubmission(opts.submission),
      repo: opts.submission.kind === "git" ? opts.submission.repo : null,
      ref: opts.submission.kind === "git" ? opts.submission.ref : null,
      sha: ws.submissionSha,
    },
    evaluationKey: opts.evaluationKey ?? null,
    verdict,
    reason,
    official,
    probes,
    workspaceResets: ws.resets,
    durations: { workspaceS, officialS, probesS, totalS: since(t0) },
    gpuSeconds: gpuCount * (officialS + probesS),
    params,
    gpuMemory: gpuMemoryOfRecord(ctx ? jobGpus(ctx) : [], gpuPeaks),
    environment: {
      platform: `${platform()}-${arch()}`,
      node: process.version,
      python: py?.python ?? null,
      torch: py?.torch ?? null,
      cuda: py?.cuda ?? null,
      backend: ctx?.backend ?? "gloo",
      worldSize: ctx?.worldSize ?? defaultWorldSize(spec),
      gpus,
      sandboxed: ctx?.isolation.sandbox != null,
      cgroup: cgroups ? `v${cgroups.version}` : null,
    },
    startedAt: startedAt.toISOString(),
    finishedAt: now().toISOString(),
    error: harnessError,
    signature: null,
  });
  emit({ type: "phase-end", phase: "verdict", durationS: 0, detail: verdict });
  const { value: clean } = withholdLeaks(result, secrets);
  return opts.signingKey ? signResult(clean, opts.signingKey) : clean;
}
