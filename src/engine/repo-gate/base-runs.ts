import { existsSync } from "node:fs";
import { join } from "node:path";
import type { FailingTest, OfficialResult } from "../../core/result.js";
import type { ProbeCheck } from "../../core/probe-outcome.js";
import { pytestFailureCause } from "../../core/pytest-failure.js";
import { compareGateRuns } from "../../core/test-outcomes.js";
import { outcomeKey, type TestOutcome } from "../../core/test-ids.js";
import { formatSeconds } from "../../core/sizes.js";
import { HarnessError } from "../errors.js";
import { runLimits, type EvaluationContext } from "../evaluation-context.js";
import type { JobSetup } from "../evaluation-setup.js";
import type { PlannedJob } from "../jobs/job-plan.js";
import type { JunitReport } from "../junit.js";
import { runOfficialRun, type OfficialRun } from "../official-phase.js";
import { baseCacheKey, readBaseOutcomes, writeBaseOutcomes, type BaseOutcomes } from "./base-cache.js";
import { baseTestsOnHead, copyTree } from "./base-trees.js";

/** The three runs' results, once judged: the official result of record and the gate's checks. */
export interface GateTestsOutcome {
  official: OfficialResult;
  checks: ProbeCheck[];
}

/** A job like the official one, on a slice of its own (its own port, packed beside it where the runner has room). */
function sibling(o: PlannedJob, name: string): PlannedJob {
  return { ...o, name, demand: { ...o.demand, id: `${o.demand.id}-${name}` } };
}

/** Collection errors of a report: pytest writes them as cases with an empty class name. */
function collectionErrors(report: JunitReport | null): Array<{ name: string; detail?: string; message?: string }> {
  return (report?.cases ?? []).filter((c) => c.classname === "" && c.outcome === "error").map((c) => ({ name: c.name, detail: c.detail, message: c.message }));
}

/** Why a run judged nothing (no report, a limit, a collection error, nothing collected), or null when it ran. */
function unusable(run: Pick<OfficialRun, "official" | "report" | "log">, tree: string): string | null {
  const o = run.official;
  const errors = collectionErrors(run.report);
  const cause = pytestFailureCause({ log: run.log, collectionErrors: errors, strip: [tree] });
  const said = cause ? `: ${cause}` : "";
  if (o.limit) return `stopped by the ${o.limit} limit`;
  if (!run.report) return `${o.reason ?? "no JUnit report"}${said}`;
  if (errors.length) return `${errors.length} test module${errors.length > 1 ? "s" : ""} could not be collected (${errors.slice(0, 3).map((e) => e.name).join(", ")})${said}`;
  if (o.counts.total === 0) return `no test was collected${said}`;
  return null;
}

/**
 * The official phase of a repository gate whose command runs pytest: the selected tests at the
 * head (the official run of record), at the merge base (from the runner's cache where another PR
 * on this base ran them), and the base's tests against the head's code, each a job of its own,
 * packed side by side. Judged test by test (core/test-outcomes.ts). A base whose tests cannot run
 * is a harness error naming the cause and quoting the import error: the PR is never blamed for
 * its base.
 */
export async function gateTestRuns(ev: EvaluationContext, setup: JobSetup, sel: { head: readonly string[]; base: readonly string[] }): Promise<GateTestsOutcome> {
  const { opts, spec, ws, record } = ev;
  const prBase = ws.prBase as NonNullable<typeof ws.prBase>;
  const { runner, jobs, python } = setup;
  const o = jobs.official;
  const log = (source: string) => (text: string) => ev.emit({ type: "log", source, text });
  const limits = (exceeded: () => boolean) => runLimits(ev, spec.official.timeout, exceeded);
  const environment = record.pythonEnv?.lockHash ?? `${record.host?.py.executable ?? python} ${record.host?.py.python ?? ""} torch ${record.host?.py.torch ?? "none"}`;
  const key = baseCacheKey({ mergeBase: prBase.mergeBase, environment, taskFile: opts.task.file, tests: sel.base, backend: o.backend, ranks: o.ranks });
  const cached = readBaseOutcomes(key);
  const onHeadDir = join(ws.root, "base-on-head");
  const overlay = baseTestsOnHead({ baseDir: prBase.dir, headDir: ws.dir, dest: onHeadDir, watched: spec.official.files, selected: sel.base });
  const baseDir = cached ? null : copyTree(prBase.dir, join(ws.root, "base-run"));
  ev.emit({ type: "log", source: "official", text: `base's tests: ${cached ? `outcomes at ${prBase.mergeBase.slice(0, 12)} from the runner's cache (run ${cached.ranAt})` : `run at ${prBase.mergeBase.slice(0, 12)} beside the head's`}; against the head's code with ${overlay.restored.length} of the base's test files, conftest.py and pytest configuration put back${overlay.removed.length ? ` and ${overlay.removed.length} of the head's removed (${overlay.removed.slice(0, 3).join(", ")})` : ""}\n` });
  const inTree = (dir: string, name: string, tests: readonly string[], source: string) => (job: PlannedJob) =>
    runner.run(job, ({ ctx, gpuMemoryExceeded }) => runOfficialRun(opts.task, { ...ctx, workspace: dir, judgeDir: ws.judgeDir, python }, limits(gpuMemoryExceeded), log(source), tests, name));
  const headRun = runner.run(o, async ({ ctx, lease, gpuMemoryExceeded }) => {
    const queued = lease.waitedS >= 1 ? `, queued ${formatSeconds(lease.waitedS)}` : "";
    ev.emit({ type: "phase-start", phase: "official", detail: `${o.backend} × ${o.ranks} · head, base${cached ? " (cached)" : ""} and base's tests on the head side by side${queued}` });
    return runOfficialRun(opts.task, { ...ctx, judgeDir: ws.judgeDir, python }, limits(gpuMemoryExceeded), log("official"), sel.head);
  });
  const baseRun = baseDir ? inTree(baseDir, "official-base", sel.base, "official-base")(sibling(o, "official-base")) : null;
  const onHeadRun = inTree(onHeadDir, "official-base-on-head", sel.base, "official-base-on-head")(sibling(o, "official-base-on-head"));
  const [head, fresh, onHead] = await Promise.all([headRun, baseRun, onHeadRun]);
  record.official = head.official;
  const base = cached ?? freshOutcomes(fresh as OfficialRun, key, prBase.mergeBase, baseDir as string);
  if (fresh && !cached) {
    const why = writeBaseOutcomes(base);
    if (why) ev.emit({ type: "log", source: "official", text: `base's outcomes not cached (${why}): the next PR on this base runs them again\n` });
  }
  return judge(ev, { head, base, onHead, onHeadDir, files: [...new Set([...sel.head, ...sel.base])], cached: cached !== null });
}

/** A fresh base run as outcomes to keep; a base whose tests cannot run ends the evaluation in `error`. */
function freshOutcomes(run: OfficialRun, key: string, mergeBase: string, tree: string): BaseOutcomes {
  const why = unusable(run, tree);
  if (why) {
    const advice = run.official.limit
      ? `This is the runner or the task's limits, not the PR: the selected tests take longer on this runner than the task allows (official.timeout, limits in task.yml); raise them, select fewer tests, or run on a faster runner.`
      : `This is the base's environment, not the PR: add the missing package to the task's environment (environment.lock, or environment.fromTree), or deselect the tests in official.command.`;
    throw new HarnessError(`the base's own tests cannot run on this runner (at the merge base ${mergeBase.slice(0, 12)}, with the same command and environment): ${why}. ${advice}`, "official");
  }
  return { format: 1, key, mergeBase, ranAt: new Date().toISOString(), official: run.official, cases: (run.report?.cases ?? []).map(({ classname, name, outcome, message }) => ({ classname, name, outcome, ...(message ? { message: message.slice(0, 2000) } : {}) })) };
}

/** The three runs compared: the head's official result less what fails at the base too, and the gate's checks. */
function judge(ev: EvaluationContext, r: { head: OfficialRun; base: BaseOutcomes; onHead: OfficialRun; onHeadDir: string; files: string[]; cached: boolean }): GateTestsOutcome {
  const { spec, ws } = ev;
  const onHeadWhy = unusable(r.onHead, r.onHeadDir);
  const cases = (run: OfficialRun): TestOutcome[] => (run.report?.cases ?? []).map(({ classname, name, outcome, message }) => ({ classname, name, outcome, message }));
  const cmp = compareGateRuns({ base: r.base.cases, head: cases(r.head), baseOnHead: onHeadWhy ? null : cases(r.onHead), files: r.files, allow: spec.official.allowChanged });
  const checks = [...cmp.checks];
  if (onHeadWhy) {
    checks.unshift({ probe: "base-tests", id: "base-tests.cannot-run-on-head", category: "functional", status: "failed", attempts: 1, durationS: r.onHead.official.durationS, message: `the base's tests, which run at the base, cannot run against the head's code: ${onHeadWhy}` });
  }
  const tolerated = new Set(cmp.failingAtBase.map((f) => f.key));
  const h = r.head.official;
  const isTolerated = (t: FailingTest) => tolerated.has(outcomeKey(t));
  const reason = r.head.report ? r.head.rejudge(tolerated.size) : withCause(h.reason ?? null, r.head, ws.dir);
  const atBase = h.failing.filter(isTolerated);
  const official: OfficialResult = {
    ...h,
    passed: reason === null,
    reason: reason && atBase.length ? `${reason}; ${atBase.length} more fail at the base too` : reason,
    failing: h.failing.filter((t) => !isTolerated(t)),
    failingAtBase: atBase,
    base: { counts: r.base.official.counts, durationS: r.base.official.durationS, cached: r.cached },
  };
  return { official, checks };
}

/** A head run that judged nothing, with the import error that stopped it quoted. */
function withCause(reason: string | null, run: OfficialRun, tree: string): string | null {
  if (reason === null) return null;
  const cause = pytestFailureCause({ log: run.log, collectionErrors: collectionErrors(run.report), strip: [tree] });
  return cause && !reason.includes(cause) ? `${reason}: ${cause}` : reason;
}

/** The selected tests of the base side: those the head's paths select that the base's tree has. */
export function baseSelection(selected: readonly string[], gone: readonly string[], baseDir: string): string[] {
  return [...selected, ...gone].filter((t, i, all) => all.indexOf(t) === i && existsSync(join(baseDir, t.split("::")[0] ?? t)));
}
