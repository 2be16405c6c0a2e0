import { CATEGORIES, ProbeLineSchema, type Category, type ProbeLine } from "./probe-check.js";

/** What one run of one probe process produced, as the engine saw it from outside. */
export interface ProbeRun {
  /** The probe process's name: its file name without extension. */
  probe: string;
  /** Raw content of its results file ("" when it wrote none). */
  resultsText: string;
  exitCode: number | null;
  signal: string | null;
  /** The limit that killed it, if any. */
  limit: string | null;
  durationS: number;
}

export interface ProbeCheck extends ProbeLine {
  probe: string;
  attempts: number;
  durationS: number;
}

/** `probe_memory_state.py` → `memory`: the category a probe process is named for, else functional. */
export function categoryFromName(probe: string): Category {
  const words = probe.toLowerCase().split(/[^a-z]+/);
  return CATEGORIES.find((c) => words.includes(c)) ?? "functional";
}

/** The lines of one check id seen so far in a run: the first, how many, and whether each failed. */
interface Repeats {
  first: ProbeLine;
  times: number;
  allFailed: boolean;
}

/**
 * A check whose id came again: the same failure from several processes stays a failure (the guard's
 * `<probe>.rank<N>.integrity` is written by each rank process of each run_ranks call), with its first
 * message and the count; anything else (a forged second "passed") is an error that still says what
 * the first line reported, so the reason is in the check run, not only in --verbose.
 */
function repeated({ first, times, allFailed }: Repeats): Pick<ProbeLine, "status" | "message"> {
  if (allFailed) return { status: "failed", message: `${first.message} (reported ${times} times)`.slice(0, 4000) };
  const said = first.message ? `: ${first.message}` : "";
  return {
    status: "error",
    message: `check '${first.id}' was reported more than once (${times} lines; the first ${first.status}${said}); its results cannot be trusted`.slice(0, 4000),
  };
}

/**
 * Turns one probe run into checks. Lines that break the protocol, checks emitted twice, a crash,
 * or silence become checks too, so nothing a probe did is lost and no silence is a pass:
 * killed by a limit → failed (the submission's fault); non-zero exit or no line → error.
 */
export function checksFromRun(run: ProbeRun): ProbeCheck[] {
  const category = categoryFromName(run.probe);
  const base = { probe: run.probe, attempts: 1, durationS: run.durationS };
  const checks: ProbeCheck[] = [];
  const seen = new Map<string, number>();
  const repeats = new Map<string, Repeats>();
  const lines = run.resultsText.split("\n");
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    let parsed: ProbeLine | null = null;
    let problem = "";
    try {
      const r = ProbeLineSchema.safeParse(JSON.parse(line));
      if (r.success) parsed = r.data;
      else problem = r.error.issues.map((x) => `${x.path.join(".") || "(line)"}: ${x.message}`).join("; ");
    } catch (e) {
      problem = `not JSON (${(e as Error).message})`;
    }
    if (!parsed) {
      checks.push({ ...base, id: `${run.probe}.line-${i + 1}`, category, status: "error", message: `results line ${i + 1} breaks the probe protocol: ${problem}` });
      return;
    }
    const at = seen.get(parsed.id);
    const dup = repeats.get(parsed.id);
    if (at !== undefined && dup) {
      dup.times += 1;
      dup.allFailed &&= parsed.status === "failed";
      const first = checks[at];
      if (first) checks[at] = { ...first, ...repeated(dup) };
      return;
    }
    seen.set(parsed.id, checks.length);
    repeats.set(parsed.id, { first: parsed, times: 1, allFailed: parsed.status === "failed" });
    checks.push({ ...base, ...parsed });
  });
  const id = run.probe.replace(/_/g, "-").toLowerCase();
  if (run.limit) {
    // Running out of memory is a memory finding whichever probe was running.
    const limitCategory = run.limit === "memory" || run.limit === "gpu-memory" ? "memory" : category;
    checks.push({ ...base, id: `${id}.limit`, category: limitCategory, status: "failed", message: `the probe run was stopped by the ${run.limit} limit while running the submission` });
  } else if (run.exitCode !== 0) {
    const how = run.signal ? `was killed by ${run.signal}` : `exited with code ${run.exitCode}`;
    checks.push({ ...base, id: `${id}.exit`, category, status: "error", message: `the probe process ${how}${checks.length ? ` after ${checks.length} checks` : " before reporting any check"}` });
  } else if (checks.length === 0) {
    checks.push({ ...base, id: `${id}.silent`, category, status: "error", message: "the probe process exited without reporting any check" });
  }
  return checks;
}

/**
 * Time checks measured again: those that failed in a run, and those that could not be measured (an
 * `error`: the kit's RunnerBusy when the runner's CPUs were oversubscribed, or a crash).
 */
export function failedTimeChecks(checks: readonly ProbeCheck[]): string[] {
  return checks.filter((c) => c.category === "time" && (c.status === "failed" || c.status === "error")).map((c) => c.id);
}

/** How one retried time check went over the runs so far; a run that lost the check counts as failed. */
function tally(runs: readonly ProbeCheck[][], id: string) {
  const seen = runs.map((r) => r.find((c) => c.id === id));
  return {
    seen,
    passed: seen.filter((c) => c?.status === "passed").length,
    failed: seen.filter((c) => !c || c.status === "failed" || c.status === "skipped").length,
    unmeasured: seen.filter((c) => c?.status === "error").length,
  };
}

/**
 * Merges up to three runs of a probe whose time checks failed or could not be measured: a time
 * check passes when two runs pass it and fails when two runs fail it; a run that could not measure
 * (error) counts for neither, and a check with no two alike after three runs is an `error`
 * (inconclusive: not the submission's fault). Every other check keeps its first run's result.
 */
export function mergeRuns(runs: readonly ProbeCheck[][]): ProbeCheck[] {
  const first = runs[0] ?? [];
  return first.map((check) => {
    if (check.category !== "time" || (check.status !== "failed" && check.status !== "error")) return check;
    const t = tally(runs, check.id);
    const durationS = runs.reduce((s, r) => s + (r[0]?.durationS ?? 0), 0);
    const attempts = runs.length;
    if (runs.length === 1) return { ...check, attempts, durationS };
    const passing = t.seen.find((c) => c?.status === "passed");
    if (t.passed >= 2 && passing) return { ...passing, attempts, durationS };
    const failing = t.seen.find((c) => c?.status === "failed") ?? check;
    if (t.failed >= 2) return { ...failing, status: "failed", attempts, durationS };
    const why = t.seen.find((c) => c?.status === "error")?.message;
    return {
      ...check,
      status: "error",
      message: `inconclusive over ${attempts} runs: ${t.passed} passed, ${t.failed} failed, ${t.unmeasured} could not measure${why ? ` (${why})` : ""}`.slice(0, 2000),
      attempts,
      durationS,
    };
  });
}

/** Whether another run is needed: some retried time check has neither passed twice nor failed twice. */
export function needsAnotherRun(runs: readonly ProbeCheck[][], retried: readonly string[]): boolean {
  if (runs.length >= 3) return false;
  return retried.some((id) => {
    const t = tally(runs, id);
    return t.passed < 2 && t.failed < 2;
  });
}
