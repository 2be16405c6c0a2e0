import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import type { OfficialResult } from "../core/result.js";
import { formatSeconds } from "../core/sizes.js";
import type { LoadedTask } from "./task-load.js";
import { HarnessError } from "./errors.js";
import { runLimits, type EvaluationContext } from "./evaluation-context.js";
import type { JobSetup } from "./evaluation-setup.js";
import { gpuNote } from "./gpu-meter.js";
import { JobPool } from "./jobs/job-pool.js";
import { isolationFor } from "./sandbox/job-isolation.js";
import { expandCommand, jobEnv, type JobContext } from "./jobs/job-env.js";
import { parseJunit, type JunitReport } from "./junit.js";
import { runCommand, type RunLimits } from "./run-command.js";
import { gateOfficial } from "./repo-gate/gate-official.js";
import { expandTests } from "../core/test-selection.js";
import { baseSelection, gateTestRuns } from "./repo-gate/base-runs.js";

/**
 * Why a run did not pass, cross-checking the exit code against the JUnit report; null when it
 * passed. Nothing the tests printed is read: only the exit status and the report file.
 */
export function officialReason(
  run: { exitCode: number | null; limit: string | null },
  report: Omit<JunitReport, "cases"> | null,
  reportError: string | null,
  expectedSuite: string | null = null,
  /** Failing tests that fail at a repository gate's base too: reported, not the PR's (exit 1 is then theirs). */
  tolerated = 0,
): string | null {
  if (run.limit) return `stopped by the ${run.limit} limit`;
  if (!report) return `no JUnit report${reportError ? ` (${reportError})` : ""}: the tests did not run to completion`;
  if (expectedSuite !== null && (report.suites.length === 0 || report.suites.some((s) => s !== expectedSuite))) {
    return "the JUnit report was not written by this run's pytest (its suite name is not the one the engine set): it was forged";
  }
  const bad = report.counts.failed + report.counts.errors - tolerated;
  if (tolerated > 0 && bad === 0 && run.exitCode === 1) return report.counts.passed === 0 ? "no test passed" : null;
  if (run.exitCode !== 0 && bad === 0) return `exited with code ${run.exitCode ?? "none"} although the report lists no failing test`;
  if (bad > 0 && run.exitCode === 0) return "the report lists failing tests although the run exited 0";
  if (bad > 0) return `${bad} of ${report.counts.total} tests failed`;
  if (report.counts.total === 0) return "no tests ran";
  if (report.counts.passed === 0) return "every test was skipped";
  return null;
}

/** Whether a command runs pytest (`pytest`, `py.test`, `python -m pytest`, `pytest-3`). */
export function runsPytest(argv: readonly string[]): boolean {
  return argv.some((a) => /^py\.?test(-3)?$/.test(basename(a)));
}

/** One run of the official command and what it left: the judged result, its report (null: none), its output. */
export interface OfficialRun {
  official: OfficialResult;
  report: JunitReport | null;
  /** The first and last part of its output (runner-side only), for the cause of a run that could not be judged. */
  log: string;
  /** Re-judges the run counting `tolerated` failures as not its own (a repository gate's failing-at-base tests). */
  rejudge(tolerated: number): string | null;
}

/**
 * Runs the official tests and judges them from exit code + JUnit report. The report goes to a
 * folder of its own that only this run can write, is read after the process group is gone, and
 * (under pytest) must carry the suite name the engine drew at random for this run, so a report a
 * submission wrote before exiting 0 is not taken for the real one. `ctx.workspace` is the tree it
 * runs in (a repository gate runs the same command in the base's tree too); `reportName` keeps
 * each run's report folder apart. It keeps the report and the output.
 */
export async function runOfficialRun(
  task: LoadedTask,
  ctx: JobContext & { judgeDir: string; python: string },
  limits: RunLimits,
  log: (text: string) => void,
  tests: readonly string[] = [],
  reportName = "official",
): Promise<OfficialRun> {
  const reportDir = join(ctx.judgeDir, reportName);
  mkdirSync(reportDir, { recursive: true });
  const junit = join(reportDir, "junit.xml");
  const argv = expandTests(expandCommand(task.spec.official.command, { python: ctx.python, junit, workspace: ctx.workspace }), tests);
  const suite = runsPytest(argv) ? `probegate-${randomBytes(12).toString("hex")}` : null;
  const plugins = suite ? (task.spec.setup?.pytestPlugins ?? []).map((p) => ` -p ${p}`).join("") : "";
  const env = jobEnv(ctx, suite ? { PYTEST_ADDOPTS: `-o junit_suite_name=${suite}${plugins}` } : {});
  const isolation = await isolationFor(ctx.isolation, {
    cwd: ctx.workspace,
    readOnly: ctx.setupDir ? [ctx.setupDir] : [],
    readWrite: [ctx.workspace, env.HOME as string, reportDir],
    readOnlyInside: existsSync(join(ctx.workspace, ".git")) ? [join(ctx.workspace, ".git")] : [],
  });
  const run = await runCommand(argv, { cwd: ctx.workspace, env, limits, isolation, cpus: ctx.cpus });
  log(run.log);
  if (run.spawnError) throw new HarnessError(`the official test command could not start: ${run.spawnError}`, "official");
  let report: JunitReport | null = null;
  let reportError: string | null = null;
  if (existsSync(junit)) {
    try {
      report = parseJunit(readFileSync(junit, "utf8"));
    } catch (e) {
      reportError = (e as Error).message;
    }
  }
  const reason = officialReason(run, report, reportError, suite);
  const official: OfficialResult = {
    passed: reason === null,
    reason,
    exitCode: run.exitCode,
    signal: run.signal,
    limit: run.limit,
    reportFound: report !== null,
    counts: report?.counts ?? { total: 0, passed: 0, failed: 0, errors: 0, skipped: 0 },
    failing: report?.failing ?? [],
    durationS: run.durationS,
    peakMemoryBytes: run.peakMemoryBytes,
    memorySource: run.memorySource,
  };
  return { official, report, log: run.log, rejudge: (tolerated) => officialReason(run, report, reportError, suite, tolerated) };
}

/**
 * The official phase of an evaluation: the official job on its slice of the runner. Its start line
 * is sent once the slice is held, so it names the GPUs and cores it got, how long it queued, and
 * what of it another probegate process held meanwhile; its duration is the run's own, queue left out.
 * A repository gate whose command runs pytest runs its selected tests on both trees and the base's
 * tests on the head's code, judged test by test (repo-gate/base-runs.ts); their checks join the guard's.
 */
export async function officialPhase(ev: EvaluationContext, setup: JobSetup): Promise<OfficialResult> {
  const { runner, jobs, python } = setup;
  const { opts, spec, ws, record } = ev;
  const o = jobs.official;
  const gate = await gateOfficial(ev, python);
  if (gate) {
    record.guard = gate.guard;
    const weakened = gate.guard.filter((c) => c.status === "failed").length;
    const sel = gate.selected;
    const gone = sel?.gone.length ? `; not in the head, left to the guard: ${sel.gone.join(", ")}` : "";
    const tests = sel ? `; ${sel.tests.length} test selections (${sel.tests.slice(0, 3).join(", ")}${sel.tests.length > 3 ? ", …" : ""})${gone}` : "";
    ev.emit({ type: "log", source: "official", text: `repository gate: ${gate.changed.length} paths changed against ${ws.prBase?.mergeBase.slice(0, 12)}${tests}; weakened-test guard: ${weakened ? `${weakened} findings` : "nothing weakened"}\n` });
  }
  let official: OfficialResult;
  if (gate && ws.prBase && runsPytest(spec.official.command)) {
    const head = gate.selected?.tests ?? [];
    const judged = await gateTestRuns(ev, setup, { head, base: baseSelection(head, gate.selected?.gone ?? [], ws.prBase.dir) });
    record.guard = [...record.guard, ...judged.checks];
    official = judged.official;
  } else {
    official = await runner.run(o, async ({ ctx, lease, gpuMemoryExceeded }) => {
      const queued = lease.waitedS >= 1 ? `, queued ${formatSeconds(lease.waitedS)}` : "";
      ev.emit({ type: "phase-start", phase: "official", detail: `${o.backend} × ${o.ranks} · ${JobPool.describe(lease)}${queued}${JobPool.waitNote(lease)}` });
      const run = await runOfficialRun(opts.task, { ...ctx, judgeDir: ws.judgeDir, python }, runLimits(ev, spec.official.timeout, gpuMemoryExceeded), (text) => ev.emit({ type: "log", source: "official", text }), gate?.selected?.tests);
      return run.official;
    });
  }
  record.official = official;
  record.officialS = official.durationS;
  const peak = runner.peaks.get("official") ?? null;
  const atBase = official.failingAtBase?.length ? `; ${official.failingAtBase.length} failing at the base too` : "";
  ev.emit({ type: "phase-end", phase: "official", durationS: record.officialS, detail: (official.passed ? `${official.counts.passed} passed` : (official.reason ?? "failed")) + atBase + gpuNote(peak) });
  return official;
}
