import type { Context } from "probot";
import { isTerminal } from "../core/evaluation-state.js";
import type { GitHubClient } from "../github/client.js";
import { downloadResultArtifact } from "../github/evaluator.js";
import { checkResult, resultFileFromZip } from "../github/result-artifact.js";
import { linkDelivery } from "../store/deliveries.js";
import { getDispatchContext } from "../store/dispatch-context.js";
import { findEvaluationByWorkflowRun, transitionEvaluation } from "../store/evaluations.js";
import type { AppDeps } from "./deps.js";
import { finishWithoutResult, finishWithResult } from "./evaluation-runner.js";

/**
 * `workflow_run` of an evaluator run the app dispatched. `in_progress` marks the evaluation running;
 * `completed` downloads the result artifact, checks it (schema, signature, evaluation key, head SHA,
 * task) and reports it. Anything short of a trusted result ends as `error`, never as success.
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
  const artifact = await downloadResultArtifact(evaluatorGh, evaluatorRepo, run.id);
  const ranAs = `the evaluator run ${run.html_url} ended ${run.conclusion ?? "without a conclusion"}`;
  if (!artifact.ok) {
    await finishWithoutResult(prGh, deps, e, "No result from the evaluator", [artifact.problem, ranAs]);
    return;
  }
  const file = resultFileFromZip(artifact.zip);
  if (!file.ok) {
    await finishWithoutResult(prGh, deps, e, "Result rejected", file.problems);
    return;
  }
  const checked = checkResult(file.text, { evaluationKey: e.key, headSha: e.headSha, task: e.task, signingKey: deps.signingKey });
  if (!checked.ok) {
    context.log.warn({ key: e.key, problems: checked.problems }, `rejected the result of workflow run ${run.id}`);
    await finishWithoutResult(prGh, deps, e, "Result rejected", checked.problems.map((p) => `${file.name}: ${p}`));
    return;
  }
  await finishWithResult(prGh, deps, e, checked.result);
}
