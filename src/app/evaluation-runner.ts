import { checkRunName, noResultOutput, queuedOutput, RERUN_ACTION, supersededOutput, timedOutOutput } from "../core/app-check-outputs.js";
import { renderCheckRun } from "../core/check-run-render.js";
import { evaluationKey } from "../core/evaluation-key.js";
import { isTerminal } from "../core/evaluation-state.js";
import { completeCheckRun, ensureCheckRun } from "../github/check-runs.js";
import type { GitHubClient, RepoRef } from "../github/client.js";
import { cancelEvaluation, dispatchEvaluation, type Evaluator } from "../github/evaluator.js";
import { linkDelivery } from "../store/deliveries.js";
import { getDispatchContext, recordProbeFailures, setDispatchContext, setRunUrl, timeOutOverdue } from "../store/dispatch-context.js";
import { insertOrGetEvaluation, supersedeOlderHeads, transitionEvaluation, type EvaluationRecord } from "../store/evaluations.js";
import type { EvaluationResult } from "../core/result.js";
import type { AppDeps } from "./deps.js";

/** One evaluation to start: a PR head against one routed task, with where and why. */
export interface StartRequest {
  repo: RepoRef;
  pr: number;
  headSha: string;
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
}

export type StartOutcome = "dispatched" | "already-running" | "already-done" | "superseded" | "dispatch-failed";

/**
 * Queues one evaluation and dispatches its evaluator run: creates (or finds, by external_id) its
 * queued check run, dispatches the workflow, and records the run id. The evaluation key makes this
 * idempotent: a redelivered event, a concurrent one, or a retried request never starts a key twice.
 */
export async function startEvaluation(gh: GitHubClient, deps: AppDeps, req: StartRequest): Promise<{ key: string; outcome: StartOutcome }> {
  const key = evaluationKey({ owner: req.repo.owner, repo: req.repo.repo, headSha: req.headSha, task: req.task, probeSet: req.probeSet });
  const { evaluation, created } = insertOrGetEvaluation(
    deps.db,
    { owner: req.repo.owner, repo: req.repo.repo, pr: req.pr, headSha: req.headSha, task: req.task, probeSet: req.probeSet, agent: req.agent },
    deps.now(),
  );
  if (req.deliveryId) linkDelivery(deps.db, req.deliveryId, key);
  if (deps.starting.has(key)) return { key, outcome: "already-running" };
  let e = evaluation;
  if (!created) {
    if (e.state === "superseded") return { key, outcome: "superseded" };
    // A queued row without a run is one a crash interrupted: start it again below.
    if (!isTerminal(e.state) && !(e.state === "queued" && e.workflowRunId === null)) return { key, outcome: "already-running" };
    if (isTerminal(e.state)) {
      if (!req.rerun) return { key, outcome: "already-done" };
      e = transitionEvaluation(deps.db, key, "retry", { now: deps.now(), expectedVersion: e.version });
    }
  }
  deps.starting.add(key);
  try {
    setDispatchContext(deps.db, key, { installationId: req.installationId, evaluatorRepo: req.evaluator.repository, workflow: req.evaluator.workflow, ref: req.evaluator.ref, deadlineS: req.timeoutS });
    return { key, outcome: await dispatch(gh, deps, e, req) };
  } finally {
    deps.starting.delete(key);
  }
}

async function dispatch(gh: GitHubClient, deps: AppDeps, e: EvaluationRecord, req: StartRequest): Promise<StartOutcome> {
  const target = { ...req.repo, name: checkRunName(req.task), headSha: req.headSha, externalId: e.key };
  const queued = queuedOutput({ task: req.task, why: req.why, agent: req.agent, evaluator: `${req.evaluator.repository}:${req.evaluator.workflow}@${req.evaluator.ref}`, attempt: e.attempt });
  const check = await ensureCheckRun(gh, target, { status: "queued", ...queued }, { pendingOnly: true });
  let run: { runId: number; htmlUrl: string };
  try {
    run = await dispatchEvaluation(gh, req.evaluator, { repository: `${req.repo.owner}/${req.repo.repo}`, sha: req.headSha, task: req.task, evaluationKey: e.key });
  } catch (err) {
    // No answer: the run may or may not exist. The evaluation stays queued, so a redelivery or
    // the next start resumes it; an answer (4xx/5xx after retries) ends the attempt.
    // (Octokit reports a network failure as status 500 without a response.)
    if ((err as { response?: unknown }).response === undefined) throw err;
    const message = `dispatching ${req.evaluator.repository}/${req.evaluator.workflow} failed: ${(err as Error).message}`;
    transitionEvaluation(deps.db, e.key, "fail", { now: deps.now(), patch: { checkRunId: check.id, error: message } });
    await completeCheckRun(gh, { ...req.repo, checkRunId: check.id }, noResultOutput("Could not start the evaluator", [message]), { actions: [RERUN_ACTION] });
    deps.log.warn({ key: e.key }, message);
    return "dispatch-failed";
  }
  transitionEvaluation(deps.db, e.key, "dispatch", { now: deps.now(), patch: { checkRunId: check.id, workflowRunId: run.runId } });
  if (run.htmlUrl) setRunUrl(deps.db, e.key, run.htmlUrl);
  return "dispatched";
}

/**
 * Supersedes the pending evaluations of a PR's older heads: cancels their evaluator runs and
 * completes their check runs as cancelled, naming the newer head.
 */
export async function supersedeOlder(gh: GitHubClient, deps: AppDeps, repo: RepoRef, pr: number, headSha: string): Promise<EvaluationRecord[]> {
  const old = supersedeOlderHeads(deps.db, { ...repo, pr, headSha }, deps.now());
  for (const e of old) {
    const ctx = getDispatchContext(deps.db, e.key);
    if (ctx && e.workflowRunId !== null) await cancelEvaluation(gh, ctx.evaluatorRepo, e.workflowRunId);
    if (e.checkRunId !== null) await completeCheckRun(gh, { ...repo, checkRunId: e.checkRunId }, supersededOutput(headSha));
  }
  return old;
}

/** Reports a verified result: the verdict's conclusion, summary, annotations and the rerun button. */
export async function finishWithResult(gh: GitHubClient, deps: AppDeps, e: EvaluationRecord, result: EvaluationResult): Promise<void> {
  const done = transitionEvaluation(deps.db, e.key, "complete", { now: deps.now(), expectedVersion: e.version, patch: { verdict: result.verdict } });
  recordProbeFailures(deps.db, e.key, e.attempt, result.probes);
  if (done.checkRunId === null) return;
  const url = getDispatchContext(deps.db, e.key)?.runUrl ?? undefined;
  await completeCheckRun(gh, { owner: e.owner, repo: e.repo, checkRunId: done.checkRunId }, renderCheckRun(result), { actions: [RERUN_ACTION], ...(url ? { detailsUrl: url } : {}) });
}

/** Ends an attempt without a usable result (`error`); its check run says why and is never a success. */
export async function finishWithoutResult(gh: GitHubClient, deps: AppDeps, e: EvaluationRecord, title: string, problems: string[]): Promise<void> {
  const done = transitionEvaluation(deps.db, e.key, "fail", { now: deps.now(), expectedVersion: e.version, patch: { error: `${title}: ${problems.join("; ")}` } });
  if (done.checkRunId === null) return;
  await completeCheckRun(gh, { owner: e.owner, repo: e.repo, checkRunId: done.checkRunId }, noResultOutput(title, problems), { actions: [RERUN_ACTION] });
}

/**
 * Times out the evaluations past their deadline: cancels their runs (a late result is not taken)
 * and completes their check runs as timed out, with the rerun button. Returns how many.
 */
export async function sweepOverdue(deps: AppDeps): Promise<number> {
  const overdue = timeOutOverdue(deps.db, deps.now(), deps.defaultTimeoutS);
  for (const e of overdue) {
    const ctx = getDispatchContext(deps.db, e.key);
    try {
      if (!ctx) throw new Error("the store has no installation for it");
      const gh = await deps.auth(ctx.installationId);
      if (e.workflowRunId !== null) await cancelEvaluation(gh, ctx.evaluatorRepo, e.workflowRunId);
      if (e.checkRunId !== null) await completeCheckRun(gh, { owner: e.owner, repo: e.repo, checkRunId: e.checkRunId }, timedOutOutput(e.error ?? "past its deadline"), { actions: [RERUN_ACTION] });
    } catch (err) {
      deps.log.error({ key: e.key, err }, `evaluation ${e.key} timed out, but its check run could not be updated: ${(err as Error).message}`);
    }
  }
  return overdue.length;
}

/**
 * After a restart: starts again the evaluations a crash left queued without a run. Dispatched and
 * running ones need nothing: their `workflow_run` events find them in the store, and the sweep
 * times out those whose runner died.
 */
export async function resumeQueued(deps: AppDeps, pending: ReadonlyArray<EvaluationRecord>): Promise<number> {
  let resumed = 0;
  for (const e of pending) {
    const ctx = getDispatchContext(deps.db, e.key);
    if (e.state !== "queued" || e.workflowRunId !== null || !ctx || e.pr === null) continue;
    try {
      const gh = await deps.auth(ctx.installationId);
      const { outcome } = await startEvaluation(gh, deps, {
        repo: { owner: e.owner, repo: e.repo },
        pr: e.pr,
        headSha: e.headSha,
        installationId: ctx.installationId,
        agent: e.agent ?? "an agent",
        task: e.task,
        why: ["resumed after the app restarted"],
        evaluator: { repository: ctx.evaluatorRepo, workflow: ctx.workflow, ref: ctx.ref },
        probeSet: e.probeSet,
        timeoutS: ctx.deadlineS,
        rerun: false,
        deliveryId: null,
      });
      if (outcome === "dispatched") resumed += 1;
    } catch (err) {
      deps.log.error({ key: e.key, err }, `could not resume evaluation ${e.key}: ${(err as Error).message}`);
    }
  }
  return resumed;
}
