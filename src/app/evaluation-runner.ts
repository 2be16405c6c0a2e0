import { checkRunName, closedOutput, endedWhileStartingOutput, noResultOutput, queuedOutput, RERUN_ACTION, supersededOutput } from "../core/app-check-outputs.js";
import { deferredOutput } from "../core/app-policy/evaluation-budget.js";
import type { CheckRunOutput } from "../core/check-run-render.js";
import { evaluationKey } from "../core/evaluation-key.js";
import { IllegalTransitionError, isTerminal } from "../core/evaluation-state.js";
import { completeCheckRun, ensureCheckRun } from "../github/check-runs.js";
import type { GitHubClient, RepoRef } from "../github/client.js";
import { cancelEvaluation, dispatchEvaluation, findDispatchedRun, type Evaluator } from "../github/evaluator.js";
import { linkDelivery } from "../store/deliveries.js";
import { getDispatchContext, setDispatchContext, setRunUrl } from "../store/dispatch-context.js";
import { deferEvaluation, setEvaluationPolicy, type EvaluationPolicy } from "../store/evaluation-policy.js";
import { cancelPendingOfPr, supersedeOlderHeads } from "../store/evaluation-endings.js";
import {
  claimDispatch,
  getEvaluation,
  insertOrGetEvaluation,
  releaseClaim,
  StaleEvaluationError,
  transitionEvaluation,
  type EvaluationRecord,
  type TransitionPatch,
} from "../store/evaluations.js";
import type { AppDeps } from "./deps.js";
import { refreshGate } from "./gate.js";

/** One evaluation to start: a PR head against one routed task, with where and why. */
export interface StartRequest {
  repo: RepoRef;
  pr: number;
  headSha: string;
  /**
   * The PR's base commit now (or the merge group's base). The store keeps the first one it is
   * given for the evaluation, and the dispatch sends that one, so a rerun is judged as before.
   */
  baseSha: string;
  installationId: number;
  agent: string;
  task: string;
  why: ReadonlyArray<string>;
  evaluator: Evaluator;
  probeSet: string;
  timeoutS: number;
  /** A rerun starts a finished evaluation of the key again; an ordinary event leaves it alone. */
  rerun: boolean;
  deliveryId: string | null;
  /** The repository's rules for the evaluation (sandbox, probe detail), kept with it. */
  policy: EvaluationPolicy;
  /** The runner label or scale-set name to dispatch to; null: the workflow's own default. */
  runner: string | null;
  /** The PR is over its evaluation budget: queue the attempt with its check run and start it then. */
  deferUntil?: { nextAt: Date; used: number; limit: number } | null;
  /** The evaluation cannot be started at all (no runner fits): it ends as `error` with this reason. */
  blocked?: { title: string; problems: string[] } | null;
}

export type StartOutcome = "dispatched" | "deferred" | "blocked" | "already-running" | "already-done" | "superseded" | "cancelled" | "dispatch-failed";

/**
 * How long a dispatch claim holds: far longer than creating a check run and dispatching a workflow
 * take (retries included), so a live holder never loses it; a holder that died mid-dispatch leaves
 * the attempt to the sweep of any process after this long.
 */
export const DISPATCH_LEASE_MS = 10 * 60_000;

/**
 * Queues one evaluation and dispatches its evaluator run: creates (or finds, by external_id) its
 * queued check run, dispatches the workflow, and records the run id. The evaluation key makes this
 * idempotent, and the dispatch claim makes it exclusive: a redelivered event, a concurrent one in
 * this or another app process, or a retried request never starts an attempt twice.
 */
export async function startEvaluation(gh: GitHubClient, deps: AppDeps, req: StartRequest): Promise<{ key: string; outcome: StartOutcome }> {
  const key = evaluationKey({ owner: req.repo.owner, repo: req.repo.repo, headSha: req.headSha, task: req.task, probeSet: req.probeSet });
  const { evaluation, created } = insertOrGetEvaluation(
    deps.db,
    { owner: req.repo.owner, repo: req.repo.repo, pr: req.pr, headSha: req.headSha, task: req.task, probeSet: req.probeSet, agent: req.agent, baseSha: req.baseSha },
    deps.now(),
  );
  if (req.deliveryId) linkDelivery(deps.db, req.deliveryId, key);
  let e = evaluation;
  if (!created) {
    if (e.state === "superseded") return { key, outcome: "superseded" };
    // A queued row without a run is one a crash interrupted, or one another handler is starting:
    // the claim below tells which. Any other pending state has its run.
    if (!isTerminal(e.state) && !(e.state === "queued" && e.workflowRunId === null)) return { key, outcome: "already-running" };
    if (isTerminal(e.state)) {
      // A cancelled attempt (the PR was closed) never finished: the PR's next event starts it again.
      if (!req.rerun && e.state !== "cancelled") return { key, outcome: "already-done" };
      try {
        e = transitionEvaluation(deps.db, key, "retry", { now: deps.now(), expectedVersion: e.version });
      } catch (err) {
        // Another handler retried it first; that one starts it.
        if (err instanceof StaleEvaluationError) return { key, outcome: "already-running" };
        throw err;
      }
    }
  }
  if (!claimDispatch(deps.db, key, deps.instance, deps.now(), deps.dispatchLeaseMs)) return { key, outcome: "already-running" };
  try {
    setDispatchContext(deps.db, key, { installationId: req.installationId, evaluatorRepo: req.evaluator.repository, workflow: req.evaluator.workflow, ref: req.evaluator.ref, deadlineS: req.timeoutS });
    setEvaluationPolicy(deps.db, key, req.policy, req.runner);
    if (req.blocked) return { key, outcome: await block(gh, deps, e, req, req.blocked) };
    if (req.deferUntil) return { key, outcome: await defer(gh, deps, e, req, req.deferUntil) };
    return { key, outcome: await dispatch(gh, deps, e, req) };
  } finally {
    releaseClaim(deps.db, key, deps.instance);
  }
}

/** The attempt waits for the PR's budget: a queued check run says until when; the sweep starts it then. */
async function defer(gh: GitHubClient, deps: AppDeps, e: EvaluationRecord, req: StartRequest, d: { nextAt: Date; used: number; limit: number }): Promise<StartOutcome> {
  const target = { ...req.repo, name: checkRunName(req.task), headSha: req.headSha, externalId: e.key };
  const check = await ensureCheckRun(gh, target, { status: "queued", ...deferredOutput(d) }, { pendingOnly: true });
  deferEvaluation(deps.db, e.key, d.nextAt, check.id);
  deps.log.info({ key: e.key }, `evaluation ${e.key} deferred until ${d.nextAt.toISOString()} (PR #${req.pr} over its budget of ${d.limit} an hour)`);
  return "deferred";
}

/** The attempt cannot start (no runner fits the task): one check run says why, and it ends as `error`. */
async function block(gh: GitHubClient, deps: AppDeps, e: EvaluationRecord, req: StartRequest, why: { title: string; problems: string[] }): Promise<StartOutcome> {
  const target = { ...req.repo, name: checkRunName(req.task), headSha: req.headSha, externalId: e.key };
  const check = await ensureCheckRun(gh, target, { status: "in_progress", title: why.title, summary: "" }, { pendingOnly: true });
  const ended = endIfStill(deps, e.key, "fail", { checkRunId: check.id, error: `${why.title}: ${why.problems.join("; ")}` });
  if (ended) return endedMeanwhile(gh, deps, req, ended, check.id, null);
  await completeCheckRun(gh, { ...req.repo, checkRunId: check.id }, noResultOutput(why.title, why.problems), { actions: [RERUN_ACTION] });
  await refreshGate(gh, deps, { ...req.repo, headSha: req.headSha });
  return "blocked";
}

async function dispatch(gh: GitHubClient, deps: AppDeps, e: EvaluationRecord, req: StartRequest): Promise<StartOutcome> {
  const target = { ...req.repo, name: checkRunName(req.task), headSha: req.headSha, externalId: e.key };
  const queued = queuedOutput({ task: req.task, why: req.why, agent: req.agent, evaluator: `${req.evaluator.repository}:${req.evaluator.workflow}@${req.evaluator.ref}`, attempt: e.attempt });
  const check = await ensureCheckRun(gh, target, { status: "queued", ...queued }, { pendingOnly: true });
  // A deferred attempt's check run still says it waits: it says what runs now.
  if (!check.created && e.deferredUntil !== null) await gh.rest.checks.update({ ...req.repo, check_run_id: check.id, status: "queued", output: queued });
  // The PR may have been closed, or pushed to, while the check run was being made.
  const before = getEvaluation(deps.db, e.key);
  // Another process dispatched it meanwhile (its claim lapsed while this one was slow): it is that one's.
  if (before && !isTerminal(before.state) && before.state !== "queued") return "already-running";
  if (before && before.state !== "queued") return endedMeanwhile(gh, deps, req, before, check.id, null);
  let run: { runId: number; htmlUrl: string };
  try {
    // A process that held the claim died (it never released it) after making the check run: it may
    // have dispatched, too, before it could record the run. Find that run rather than start another.
    const diedMidDispatch = !check.created && e.claimUntil !== null;
    const earlier = !diedMidDispatch ? null : await findDispatchedRun(gh, req.evaluator, e.key, new Date(e.attemptStartedAt.getTime() - 60_000));
    run = earlier ?? await dispatchEvaluation(gh, req.evaluator, {
      repository: `${req.repo.owner}/${req.repo.repo}`,
      sha: req.headSha,
      baseSha: e.baseSha ?? req.baseSha,
      task: req.task,
      evaluationKey: e.key,
      ...(req.runner ? { runner: req.runner } : {}),
    });
  } catch (err) {
    // No answer: the run may or may not exist. The evaluation stays queued, so a redelivery or
    // the next start resumes it; an answer (4xx/5xx after retries) ends the attempt.
    // (Octokit reports a network failure as status 500 without a response.)
    if ((err as { response?: unknown }).response === undefined) throw err;
    const message = `dispatching ${req.evaluator.repository}/${req.evaluator.workflow} failed: ${(err as Error).message}`;
    const ended = endIfStill(deps, e.key, "fail", { checkRunId: check.id, error: message });
    if (ended) return endedMeanwhile(gh, deps, req, ended, check.id, null);
    await completeCheckRun(gh, { ...req.repo, checkRunId: check.id }, noResultOutput("Could not start the evaluator", [message]), { actions: [RERUN_ACTION] });
    deps.log.warn({ key: e.key }, message);
    await refreshGate(gh, deps, { ...req.repo, headSha: req.headSha });
    return "dispatch-failed";
  }
  const ended = endIfStill(deps, e.key, "dispatch", { checkRunId: check.id, workflowRunId: run.runId });
  if (ended) return endedMeanwhile(gh, deps, req, ended, check.id, run.runId);
  if (run.htmlUrl) setRunUrl(deps.db, e.key, run.htmlUrl);
  return "dispatched";
}

/**
 * Applies `event` to an attempt this process is dispatching. Returns null when it did; returns the
 * evaluation when another handler ended the attempt meanwhile (the PR was closed, or a newer push
 * superseded it), which the dispatch must then clean up after.
 */
function endIfStill(deps: AppDeps, key: string, event: "dispatch" | "fail", patch: TransitionPatch): EvaluationRecord | null {
  try {
    transitionEvaluation(deps.db, key, event, { now: deps.now(), patch });
    return null;
  } catch (err) {
    const current = getEvaluation(deps.db, key);
    if (err instanceof IllegalTransitionError && current && isTerminal(current.state)) return current;
    throw err;
  }
}

/**
 * The attempt ended while this process was starting it: whoever ended it could not see the check
 * run or the run this process was making, so this process cancels the run and completes the check
 * run, saying why. Every attempt ends with exactly one final check run.
 */
async function endedMeanwhile(gh: GitHubClient, deps: AppDeps, req: StartRequest, e: EvaluationRecord, checkRunId: number, runId: number | null): Promise<StartOutcome> {
  if (runId !== null) await cancelEvaluation(gh, req.evaluator.repository, runId);
  const why = e.error ?? `it ended as ${e.state}`;
  await completeCheckRun(gh, { ...req.repo, checkRunId }, endedWhileStartingOutput(why, runId !== null));
  deps.log.info({ key: e.key }, `evaluation ${e.key} ended (${why}) while it was being started`);
  await refreshGate(gh, deps, { ...req.repo, headSha: e.headSha });
  return e.state === "superseded" ? "superseded" : "cancelled";
}

/**
 * Supersedes the pending evaluations of a PR's older heads: cancels their evaluator runs and
 * completes their check runs as cancelled, naming the newer head.
 */
export async function supersedeOlder(gh: GitHubClient, deps: AppDeps, repo: RepoRef, pr: number, headSha: string): Promise<EvaluationRecord[]> {
  const old = supersedeOlderHeads(deps.db, { ...repo, pr, headSha }, deps.now());
  await stopRuns(gh, deps, repo, old, supersededOutput(headSha));
  return old;
}

/**
 * Cancels the pending evaluations of a closed PR (merged or not): cancels their evaluator runs,
 * which would only spend GPU time, and completes their check runs as cancelled. Reopening the PR
 * starts them again.
 */
export async function cancelForClosedPr(gh: GitHubClient, deps: AppDeps, repo: RepoRef, pr: number, merged: boolean): Promise<EvaluationRecord[]> {
  const why = merged ? "the pull request was merged before the evaluation finished" : "the pull request was closed before the evaluation finished";
  const cancelled = cancelPendingOfPr(deps.db, { ...repo, pr }, why, deps.now());
  await stopRuns(gh, deps, repo, cancelled, closedOutput(merged));
  return cancelled;
}

/** Cancels the evaluator runs of attempts that just ended early and completes their check runs with `output`. */
async function stopRuns(gh: GitHubClient, deps: AppDeps, repo: RepoRef, ended: ReadonlyArray<EvaluationRecord>, output: CheckRunOutput): Promise<void> {
  for (const e of ended) {
    const ctx = getDispatchContext(deps.db, e.key);
    if (ctx && e.workflowRunId !== null) await cancelEvaluation(gh, ctx.evaluatorRepo, e.workflowRunId);
    if (e.checkRunId !== null) await completeCheckRun(gh, { ...repo, checkRunId: e.checkRunId }, output);
  }
  for (const head of new Set(ended.map((e) => e.headSha))) await refreshGate(gh, deps, { ...repo, headSha: head });
}

