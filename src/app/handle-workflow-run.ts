import type { Context } from "probot";
import { isTerminal } from "../core/evaluation-state.js";
import type { GitHubClient } from "../github/client.js";
import { linkDelivery } from "../store/deliveries.js";
import { getDispatchContext } from "../store/dispatch-context.js";
import { findEvaluationByWorkflowRun, transitionEvaluation } from "../store/evaluations.js";
import type { AppDeps } from "./deps.js";
import { finishFromRun } from "./run-completion.js";

/**
 * `workflow_run` of an evaluator run the app dispatched. `in_progress` marks the evaluation running;
 * `completed` finishes it from the run's result artifact (`finishFromRun`).
 */
export async function onWorkflowRun(context: Context<"workflow_run">, deps: AppDeps): Promise<void> {
  const run = context.payload.workflow_run;
  const e = findEvaluationByWorkflowRun(deps.db, run.id);
  if (!e) return;
  linkDelivery(deps.db, context.id, e.key);
  const evaluatorGh = context.octokit as unknown as GitHubClient;
  const ctx = getDispatchContext(deps.db, e.key);
  // The evaluator may sit in another installation than the PR's repository.
  const prGh = ctx && ctx.installationId !== (context.payload as { installation?: { id?: number } }).installation?.id ? await deps.auth(ctx.installationId) : evaluatorGh;

  if (context.payload.action === "in_progress") {
    if (e.state !== "dispatched") return;
    const running = transitionEvaluation(deps.db, e.key, "start", { now: deps.now(), expectedVersion: e.version });
    if (running.checkRunId !== null) {
      await prGh.rest.checks.update({ owner: e.owner, repo: e.repo, check_run_id: running.checkRunId, status: "in_progress", details_url: run.html_url });
    }
    return;
  }
  if (context.payload.action !== "completed") return;
  if (isTerminal(e.state)) {
    context.log.info(`workflow run ${run.id} finished after evaluation ${e.key} ended as ${e.state}; ignored`);
    return;
  }
  const evaluatorRepo = ctx?.evaluatorRepo ?? context.payload.repository.full_name;
  await finishFromRun(evaluatorGh, prGh, deps, e, evaluatorRepo, { id: run.id, htmlUrl: run.html_url, conclusion: run.conclusion ?? null });
}
