import { platform, arch } from "node:os";
import { EvaluationResultSchema, RESULT_SCHEMA_VERSION, type EvaluationResult, type ProbeResult } from "../core/result.js";
import type { ProbeCheck } from "../core/probe-outcome.js";
import { decideVerdict } from "../core/verdict.js";
import type { EvaluationContext } from "./evaluation-context.js";
import type { GpuMemoryPeak } from "./gpu-meter.js";
import { defaultWorldSize } from "./jobs/job-plan.js";
import { withholdLeaks } from "./leak-guard.js";
import { signResult } from "./sign.js";
import { describeSubmission } from "./submission.js";

/** The result's `gpuMemory`: null for a job without GPUs, or where no phase could read them. */
function gpuMemoryOfRecord(gpus: number[], peaks: { official: GpuMemoryPeak | null; probes: GpuMemoryPeak | null }): EvaluationResult["gpuMemory"] {
  if (gpus.length === 0 || (!peaks.official && !peaks.probes)) return null;
  const phase = (p: GpuMemoryPeak | null) => (p ? { baselineBytes: p.baselineBytes, peakBytes: p.peakBytes, samples: p.samples } : null);
  return { source: "nvidia-smi", gpus, official: phase(peaks.official), probes: phase(peaks.probes) };
}

/** The probes' checks as results; a check id that two probe processes report is an error of both, not a pick of one. */
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
 * The verdict phase: the verdict from what the phases recorded, and the result of record (durations,
 * GPU-seconds summed per job, GPU memory of record, the jobs' timeline, the environment), checked
 * against its schema, with probe source withheld, signed where there is a key. Runs whatever the
 * earlier phases did, a harness error included.
 */
export function assembleResult(ev: EvaluationContext): EvaluationResult {
  const { opts, spec, record, ws } = ev;
  ev.emit({ type: "phase-start", phase: "verdict" });
  const probes = toProbeResults([...record.guard, ...record.checks]);
  const { verdict, reason } = decideVerdict({ harnessError: record.harnessError?.message, official: record.official, probes });
  const runner = record.runner;
  const records = [...(runner?.records ?? [])].sort((x, y) => x.startS - y.startS);
  const result: EvaluationResult = EvaluationResultSchema.parse({
    schemaVersion: RESULT_SCHEMA_VERSION,
    task: { id: spec.id, title: spec.title, area: spec.area, probeSet: ev.probeSet },
    submission: {
      kind: opts.submission.kind,
      source: describeSubmission(opts.submission),
      repo: opts.submission.kind === "git" ? opts.submission.repo : null,
      ref: opts.submission.kind === "git" ? opts.submission.ref : null,
      sha: ws.submissionSha,
      prBase: ws.prBase ? { asked: ws.prBase.asked, mergeBase: ws.prBase.mergeBase } : null,
    },
    evaluationKey: opts.evaluationKey ?? null,
    verdict,
    reason,
    official: record.official,
    probes,
    workspaceResets: ws.resets,
    durations: { workspaceS: record.workspaceS, officialS: record.officialS, probesS: record.probesS, totalS: ev.clock.since() },
    gpuSeconds: runner?.gpuSeconds() ?? 0,
    params: ev.params,
    gpuMemory: gpuMemoryOfRecord([...new Set(records.flatMap((r) => r.gpus))].sort((x, y) => x - y), {
      official: runner?.peaks.get("official") ?? null,
      probes: runner ? runner.probesPeak() : null,
    }),
    environment: {
      platform: `${platform()}-${arch()}`,
      node: process.version,
      python: record.host?.py.python ?? null,
      torch: record.host?.py.torch ?? null,
      cuda: record.host?.py.cuda ?? null,
      backend: record.officialJob?.backend ?? "gloo",
      worldSize: record.officialJob?.ranks ?? opts.worldSize ?? defaultWorldSize(spec),
      gpus: record.host?.gpus ?? [],
      sandboxed: record.sandboxed,
      cgroup: ev.cgroups ? `v${ev.cgroups.version}` : null,
      pythonEnv: record.pythonEnv,
    },
    jobs: runner ? records : null,
    startedAt: ev.clock.startedAt.toISOString(),
    finishedAt: ev.clock.now().toISOString(),
    error: record.harnessError,
    signature: null,
  });
  ev.emit({ type: "phase-end", phase: "verdict", durationS: 0, detail: verdict });
  const { value: clean } = withholdLeaks(result, ev.secrets);
  return opts.signingKey ? signResult(clean, opts.signingKey) : clean;
}
