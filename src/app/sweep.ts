import { RERUN_ACTION, timedOutOutput } from "../core/app-check-outputs.js";
import { completeCheckRun } from "../github/check-runs.js";
import { cancelEvaluation, getEvaluatorRun } from "../github/evaluator.js";
import { pullRequestBase } from "../github/pull-request-facts.js";
import { getDispatchContext, timeOutOverdue } from "../store/dispatch-context.js";
import { getEvaluationPolicy, getRunner, markReconciled, quietRuns, recordEvaluationRound } from "../store/evaluation-policy.js";
import { getEvaluation, StaleEvaluationError, transitionEvaluation, type EvaluationRecord } from "../store/evaluations.js";
import { IllegalTransitionError } from "../core/evaluation-state.js";
import type { AppDeps } from "./deps.js";
import { startEvaluation } from "./evaluation-runner.js";
import { finishWithoutResult } from "./evaluation-finish.js";
import { refreshGate } from "./gate.js";
import { finishFromRun } from "./run-completion.js";
import { checkOutputPosted, unpostedCheckOutputs } from "../store/check-run-outbox.js";

/** A final check-run output not posted this long after the attempt ended is taken as orphaned (its poster died). */
export const OUTBOX_GRACE_MS = 30_000;

/**
 * Posts the final check-run outputs whose attempt ended in the store but whose process died before
 * GitHub had them (nothing else would: the evaluation has ended, so no later event touches it),
 * then brings the head's gate up to date. Returns how many were posted.
 */
export async function repostCheckOutputs(deps: AppDeps): Promise<number> {
  let posted = 0;
  for (const p of unpostedCheckOutputs(deps.db, new Date(deps.now().getTime() - OUTBOX_GRACE_MS))) {
    const ctx = getDispatchContext(deps.db, p.key);
    const e = getEvaluation(deps.db, p.key);
    if (!ctx || !e) continue;
    try {
      const gh = await deps.auth(ctx.installationId);
      await completeCheckRun(gh, { owner: p.owner, repo: p.repo, checkRunId: p.checkRunId }, p.output, p.extra);
      checkOutputPosted(deps.db, p.key, p.checkRunId);
      await refreshGate(gh, deps, { owner: e.owner, repo: e.repo, headSha: e.headSha });
      posted += 1;
    } catch (err) {
      deps.log.error({ key: p.key, err }, `could not post the final check run of ${p.key}: ${(err as Error).message}`);
    }
  }
  return posted;
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
      await refreshGate(gh, deps, { owner: e.owner, repo: e.repo, headSha: e.headSha });
    } catch (err) {
      deps.log.error({ key: e.key, err }, `evaluation ${e.key} timed out, but its check run could not be updated: ${(err as Error).message}`);
    }
  }
  return overdue.length;
}

/**
 * After a restart, and on each sweep: starts the evaluations left queued without a run and without
 * a live dispatch claim — those a crash interrupted, and those whose PR's evaluation budget has
 * freed up since they were deferred. Dispatched and running ones need nothing here: their
 * `workflow_run` events find them in the store, and `reconcileQuiet` asks GitHub about quiet ones.
 */
export async function resumeQueued(deps: AppDeps, pending: ReadonlyArray<EvaluationRecord>): Promise<number> {
  let resumed = 0;
  const now = deps.now().getTime();
  for (const e of pending) {
    if (e.state !== "queued" || e.workflowRunId !== null || e.pr === null) continue;
    if (e.claimUntil !== null && e.claimUntil.getTime() > now) continue;
    if (e.deferredUntil !== null && e.deferredUntil.getTime() > now) continue;
    const ctx = getDispatchContext(deps.db, e.key);
    if (!ctx) continue;
    try {
      const gh = await deps.auth(ctx.installationId);
      const { outcome } = await startEvaluation(gh, deps, {
        repo: { owner: e.owner, repo: e.repo },
        pr: e.pr,
        headSha: e.headSha,
        // Queued before the store kept the base (migration 12): the PR's base now.
        baseSha: e.baseSha ?? (await pullRequestBase(gh, { owner: e.owner, repo: e.repo, number: e.pr })),
        installationId: ctx.installationId,
        agent: e.agent ?? "an agent",
        task: e.task,
        why: [e.deferredUntil !== null ? "the pull request's evaluation budget freed up" : "resumed after the app restarted"],
        evaluator: { repository: ctx.evaluatorRepo, workflow: ctx.workflow, ref: ctx.ref },
        probeSet: e.probeSet,
        timeoutS: ctx.deadlineS,
        rerun: false,
        deliveryId: null,
        policy: getEvaluationPolicy(deps.db, e.key),
        runner: getRunner(deps.db, e.key),
      });
      if (outcome === "dispatched") {
        resumed += 1;
        recordEvaluationRound(deps.db, { owner: e.owner, repo: e.repo, pr: e.pr, headSha: e.headSha }, deps.now());
      }
    } catch (err) {
      deps.log.error({ key: e.key, err }, `could not resume evaluation ${e.key}: ${(err as Error).message}`);
    }
  }
  return resumed;
}

/** What the reconciliation of one quiet evaluation did. */
export type ReconcileAction = "finished" | "started" | "still-running" | "run-missing" | "changed-meanwhile";

/**
 * GitHub does not redeliver a failed webhook by itself: a `workflow_run` lost while the app was
 * down would leave its evaluation pending until the deadline. For each dispatched or running
 * evaluation whose run has been quiet for `deps.reconcileAfterMs`, this asks GitHub for the run
 * (by the run id the dispatch returned) and acts as the webhook would have: an ended run is
 * finished from its artifact (none → `error`), a started one marked running, a vanished one
 * ended as `error`. Each is asked about at most once per quiet period. Returns what it did.
 */
export async function reconcileQuiet(deps: AppDeps): Promise<Array<{ key: string; action: ReconcileAction }>> {
  const done: Array<{ key: string; action: ReconcileAction }> = [];
  for (const quiet of quietRuns(deps.db, deps.now(), deps.reconcileAfterMs)) {
    const ctx = getDispatchContext(deps.db, quiet.key);
    if (!ctx || quiet.workflowRunId === null) continue;
    markReconciled(deps.db, quiet.key, deps.now());
    try {
      const gh = await deps.auth(ctx.installationId);
      const run = await getEvaluatorRun(gh, ctx.evaluatorRepo, quiet.workflowRunId);
      // The webhook may have arrived while GitHub was being asked.
      const e = getEvaluation(deps.db, quiet.key);
      if (!e || e.version !== quiet.version) {
        done.push({ key: quiet.key, action: "changed-meanwhile" });
        continue;
      }
      if (run === null) {
        await finishWithoutResult(gh, deps, e, "No result from the evaluator", [`the evaluator run ${quiet.workflowRunId} of ${ctx.evaluatorRepo} no longer exists`]);
        done.push({ key: e.key, action: "run-missing" });
      } else if (run.status === "completed") {
        await finishFromRun(gh, gh, deps, e, ctx.evaluatorRepo, { id: run.id, htmlUrl: run.htmlUrl, conclusion: run.conclusion });
        done.push({ key: e.key, action: "finished" });
      } else if (run.status === "in_progress" && e.state === "dispatched") {
        const running = transitionEvaluation(deps.db, e.key, "start", { now: deps.now(), expectedVersion: e.version });
        if (running.checkRunId !== null) await gh.rest.checks.update({ owner: e.owner, repo: e.repo, check_run_id: running.checkRunId, status: "in_progress", details_url: run.htmlUrl });
        done.push({ key: e.key, action: "started" });
      } else {
        done.push({ key: e.key, action: "still-running" });
      }
    } catch (err) {
      if (err instanceof StaleEvaluationError || err instanceof IllegalTransitionError) {
        done.push({ key: quiet.key, action: "changed-meanwhile" });
        continue;
      }
      deps.log.error({ key: quiet.key, err }, `could not reconcile evaluation ${quiet.key}: ${(err as Error).message}`);
    }
  }
  for (const d of done) if (d.action !== "still-running") deps.log.info({ key: d.key }, `reconciled evaluation ${d.key}: ${d.action}`);
  return done;
}
