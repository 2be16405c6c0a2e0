import type { GitHubClient } from "../github/client.js";
import { downloadResultArtifact } from "../github/evaluator.js";
import { checkResult, resultFileFromZip } from "../github/result-artifact.js";
import type { EvaluationRecord } from "../store/evaluations.js";
import type { AppDeps } from "./deps.js";
import { finishWithoutResult, finishWithResult } from "./evaluation-finish.js";

/** An evaluator run that ended, as a `workflow_run.completed` webhook or the sweep's question to GitHub shows it. */
export interface EndedRun {
  id: number;
  htmlUrl: string;
  conclusion: string | null;
}

/**
 * Finishes an evaluation from its ended evaluator run: downloads the result artifact, checks it
 * (schema, signature by a current or previous key, evaluation key, head SHA, task) and reports it.
 * Anything short of a trusted result ends as `error`, never as success; a run that ended without
 * an artifact (failed, cancelled, or the job never uploaded) is an `error` naming how it ended.
 * The webhook and the sweep's reconciliation both end here, so they end an evaluation alike.
 */
export async function finishFromRun(evaluatorGh: GitHubClient, prGh: GitHubClient, deps: AppDeps, e: EvaluationRecord, evaluatorRepo: string, run: EndedRun): Promise<void> {
  const artifact = await downloadResultArtifact(evaluatorGh, evaluatorRepo, run.id);
  const ranAs = `the evaluator run ${run.htmlUrl} ended ${run.conclusion ?? "without a conclusion"}`;
  if (!artifact.ok) {
    await finishWithoutResult(prGh, deps, e, "No result from the evaluator", [artifact.problem, ranAs]);
    return;
  }
  const file = resultFileFromZip(artifact.zip);
  if (!file.ok) {
    await finishWithoutResult(prGh, deps, e, "Result rejected", file.problems);
    return;
  }
  const checked = checkResult(file.text, { evaluationKey: e.key, headSha: e.headSha, baseSha: e.baseSha, task: e.task, signingKeys: deps.signingKeys });
  if (!checked.ok) {
    deps.log.warn({ key: e.key, problems: checked.problems }, `rejected the result of workflow run ${run.id}`);
    await finishWithoutResult(prGh, deps, e, "Result rejected", checked.problems.map((p) => `${file.name}: ${p}`));
    return;
  }
  await finishWithResult(prGh, deps, e, checked.result);
}
