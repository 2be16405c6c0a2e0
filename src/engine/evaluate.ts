import { randomBytes, randomInt } from "node:crypto";
import { platform, arch } from "node:os";
import { EvaluationResultSchema, RESULT_SCHEMA_VERSION, type EvaluationResult, type OfficialResult, type ProbeResult } from "../core/result.js";
import type { ProbeCheck } from "../core/probe-outcome.js";
import { formatBytes, formatSeconds } from "../core/sizes.js";
import { drawParams } from "../core/probe-params.js";
import { unmetRequirements } from "../core/task-environment.js";
import { decideVerdict } from "../core/verdict.js";
import type { LoadedTask } from "./task-load.js";
import { describeSubmission, type SubmissionSource } from "./submission.js";
import { HarnessError, InputError } from "./errors.js";
import { availableCpus, choosePython, detectGpus, inspectPython, type GpuInfo, type PythonInfo } from "./host.js";
import { findControllers } from "./cgroup.js";
import { planIsolation } from "./job-isolation.js";
import { JobPool } from "./job-pool.js";
import { defaultWorldSize, planJobs, type PlannedJob } from "./job-plan.js";
import { SliceRunner } from "./job-slice.js";
import { readProbeSecrets, withholdLeaks } from "./leak-guard.js";
import { runOfficial } from "./official-phase.js";
import { listProbes, runProbes } from "./probe-phase.js";
import { probeSetVersion } from "./probe-set.js";
import { bwrapPath, detectSandbox } from "./sandbox.js";
import type { GpuMemoryPeak } from "./gpu-meter.js";
import { signResult } from "./sign.js";
import { createWorkspace, resetHooks } from "./workspace.js";

export type Phase = "workspace" | "official" | "probes" | "verdict";

/** Progress of one evaluation, for the CLI's phase lines and the Action's log groups. */
export type EvaluationEvent =
  | { type: "phase-start"; phase: Phase; detail?: string }
  | { type: "phase-end"; phase: Phase; durationS: number; detail?: string }
  | { type: "probe-start"; probe: string; attempt: number; slice?: string }
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
  /** GPUs this evaluation may use (indices); default: every GPU nvidia-smi reports. Ignored with `pool`. */
  gpus?: number[];
  /**
   * The runner's job pool, shared by evaluations run side by side (`probegate eval` with several
   * submissions, the demo); default: a pool of its own over `gpus` and every core of this process.
   */
  pool?: JobPool;
  /** Seed of the probe parameters (task.yml `params`); default: drawn fresh. The result records it. */
  seed?: number;
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
  onEvent?: (e: EvaluationEvent) => void;
  /** Wall clock, injectable for tests. */
  now?: () => Date;
}

/** Default processes per run: torch ranks run dozens of threads each, and a cgroup counts threads. */
export const DEFAULT_PROCESSES = 4096;
/** Default bytes a run may write (workspace, HOME, its private /tmp). */
export const DEFAULT_DISK_BYTES = 4 * 1024 ** 3;

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

/** The probe phase's GPU memory of record: the probe job that held the most above its baseline. */
function probesPeak(runner: SliceRunner): GpuMemoryPeak | null {
  let best: GpuMemoryPeak | null = null;
  for (const [name, p] of runner.peaks) if (name !== "official" && (!best || p.peakBytes > best.peakBytes)) best = p;
  return best;
}

/** "2 GPUs and 16 cores" for the probe phase's progress line. */
function describePool(pool: JobPool): string {
  const s = pool.shape();
  return s.gpus ? `${s.gpus} GPU${s.gpus === 1 ? "" : "s"} and ${s.cores} cores` : `${s.cores} core${s.cores === 1 ? "" : "s"}`;
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
  // Time spent queued for the runner while none of this evaluation's jobs ran does not count.
  let queuedMs = 0;
  const deadline = () => t0 + queuedMs + spec.limits.wallClock * 1000;
  const processes = opts.runLimits?.processes ?? DEFAULT_PROCESSES;
  const diskBytes = opts.runLimits?.diskBytes ?? DEFAULT_DISK_BYTES;
  // A run is killed when its job's GPUs go over the limit (each job has a meter of its own).
  const limits = (timeoutS: number) => (gpuMemoryExceeded: () => boolean) => ({
    gpuMemoryExceeded,
    timeoutS: Math.max(1, Math.min(timeoutS, (deadline() - performance.now()) / 1000)),
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
  let officialJob: PlannedJob | null = null;
  let slices: SliceRunner | null = null;
  let sandboxed = false;
  const cgroups = findControllers();
  try {
    let support;
    [py, gpus, support] = await hostFacts;
    if (support && !support.ok) {
      throw new HarnessError(`refusing to run submission code unsandboxed: ${support.why}. Install bubblewrap, or pass --unsandboxed (Action input 'unsandboxed') to run it anyway; the result will say it ran unsandboxed.`, "sandbox");
    }
    const python = py.executable;
    const pool = opts.pool ?? (await JobPool.create({ gpus: gpus.map((g) => g.index).filter((i) => !opts.gpus || opts.gpus.includes(i)), cores: availableCpus() }));
    const unmet = unmetRequirements(spec.requires, { torch: py.torch, cuda: py.cuda, gpus: pool.shape().gpus });
    if (unmet.length) {
      throw new HarnessError(`the runner lacks what task ${spec.id} requires (requires in ${opts.task.file}): ${unmet.join("; ")}. Run it on a runner that has it; no test or probe was run.`, "requires");
    }
    // Every job is planned, and checked against the runner, before any submission code runs.
    const jobs = planJobs(opts.task, listProbes(opts.task.probesDir, spec.probes.pattern), pool.shape(), { tag: randomBytes(4).toString("hex"), worldSize: opts.worldSize });
    officialJob = jobs.official;
    const isolation = planIsolation({ support, bwrap, interpreterDirs: py.prefixes, evaluationRoot: ws.root, cgroups, processes, diskBytes });
    sandboxed = isolation([]).sandbox !== null;
    const runner = new SliceRunner({
      pool,
      t0,
      base: { workspace: ws.dir, root: ws.root, setupDir: ws.setupDir, totalCores: pool.cores.length, isolation },
      gpuLimitBytes: spec.limits.gpuMemory,
      onIdleWait: (ms) => (queuedMs += ms),
    });
    slices = runner;
    const o = jobs.official;
    official = await runner.run(o, async ({ ctx, lease, gpuMemoryExceeded }) => {
      const queued = lease.waitedS >= 1 ? `, queued ${formatSeconds(lease.waitedS)}` : "";
      emit({ type: "phase-start", phase: "official", detail: `${o.backend} × ${o.ranks} · ${JobPool.describe(lease)}${queued}` });
      return runOfficial(opts.task, { ...ctx, judgeDir: ws.judgeDir, python }, limits(spec.official.timeout)(gpuMemoryExceeded), (text) => emit({ type: "log", source: "official", text }));
    });
    officialS = official.durationS;
    const officialPeak = runner.peaks.get("official") ?? null;
    emit({ type: "phase-end", phase: "official", durationS: officialS, detail: (official.passed ? `${official.counts.passed} passed` : (official.reason ?? "failed")) + gpuNote(officialPeak) });
    if (official.passed || opts.alwaysProbe) {
      // Hooks the official run may have planted for the probe processes (a sitecustomize.py, say) go first.
      ws.resets.push(...(await resetHooks(ws)));
      emit({ type: "phase-start", phase: "probes", detail: `${jobs.probes.length} probe processes, packed on ${describePool(pool)}` });
      const t2 = performance.now();
      checks = await runProbes(opts.task, { workspace: ws.dir, root: ws.root, judgeDir: ws.judgeDir, python, kitDir: opts.kitDir, params }, jobs.probes, runner, limits(spec.probes.timeout), {
        probeStart: (probe, attempt, slice) => emit({ type: "probe-start", probe, attempt, slice }),
        probeEnd: (probe, cs) => emit({ type: "probe-end", probe, checks: cs }),
        log: (probe, text) => emit({ type: "log", source: `probe ${probe}`, text }),
      });
      probesS = since(t2);
      const failed = checks.filter((x) => x.status === "failed").length;
      emit({ type: "phase-end", phase: "probes", durationS: probesS, detail: `${checks.length - failed} of ${checks.length} passed${gpuNote(probesPeak(runner))}` });
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
  const records = [...(slices?.records ?? [])].sort((x, y) => x.startS - y.startS);
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
    gpuSeconds: slices?.gpuSeconds() ?? 0,
    params,
    gpuMemory: gpuMemoryOfRecord([...new Set(records.flatMap((r) => r.gpus))].sort((x, y) => x - y), {
      official: slices?.peaks.get("official") ?? null,
      probes: slices ? probesPeak(slices) : null,
    }),
    environment: {
      platform: `${platform()}-${arch()}`,
      node: process.version,
      python: py?.python ?? null,
      torch: py?.torch ?? null,
      cuda: py?.cuda ?? null,
      backend: officialJob?.backend ?? "gloo",
      worldSize: officialJob?.ranks ?? opts.worldSize ?? defaultWorldSize(spec),
      gpus,
      sandboxed,
      cgroup: cgroups ? `v${cgroups.version}` : null,
    },
    jobs: slices ? records : null,
    startedAt: startedAt.toISOString(),
    finishedAt: now().toISOString(),
    error: harnessError,
    signature: null,
  });
  emit({ type: "phase-end", phase: "verdict", durationS: 0, detail: verdict });
  const { value: clean } = withholdLeaks(result, secrets);
  return opts.signingKey ? signResult(clean, opts.signingKey) : clean;
}
