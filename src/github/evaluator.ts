import type { GitHubClient, RepoRef } from "./client.js";
import { RESULT_ARTIFACT, RESULT_MAX_BYTES } from "./result-artifact.js";

/** The evaluator workflow: `owner/name` of its repository, the workflow file (or id), and the ref to run it on. */
export interface Evaluator {
  repository: string;
  workflow: string;
  ref: string;
}

/** `owner/name` split into the Octokit form. */
export function repoRef(fullName: string): RepoRef {
  const [owner = "", repo = ""] = fullName.split("/");
  return { owner, repo };
}

/**
 * The probe-set version an evaluation is keyed by: the commit the evaluator ref points at now.
 * Hidden probes change only through the evaluator repository, so a new commit there is a new
 * probe set and the same PR head is evaluated again.
 */
export async function probeSetVersion(gh: GitHubClient, ev: Evaluator): Promise<string> {
  const { data } = await gh.rest.repos.getCommit({ ...repoRef(ev.repository), ref: ev.ref, per_page: 1 });
  return data.sha;
}

/**
 * The inputs of examples/workflows/probegate-evaluator.yml: six, within the ten a
 * workflow_dispatch has long been allowed (so older GitHub Enterprise Servers take it too).
 */
export interface DispatchInputs {
  repository: string;
  sha: string;
  /**
   * The PR's base commit, sent for every evaluation: a repository gate (`base: { pr: true }`)
   * compares the head with it, an assignment task ignores it. The app cannot tell which a task is
   * without reading it, and the evaluator workflow needs it to fetch both commits.
   */
  baseSha: string;
  task: string;
  evaluationKey: string;
  /** The runner label or ARC scale-set name for the task's GPU count (the workflow's `runs-on`). */
  runner?: string;
}

/**
 * Starts the evaluator workflow and returns its run: `return_run_details` makes GitHub answer 200
 * with the run id, so the app knows which `workflow_run` events are this evaluation's.
 */
export async function dispatchEvaluation(gh: GitHubClient, ev: Evaluator, inputs: DispatchInputs): Promise<{ runId: number; htmlUrl: string }> {
  const res = await gh.request("POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", {
    ...repoRef(ev.repository),
    workflow_id: ev.workflow,
    ref: ev.ref,
    inputs: {
      repository: inputs.repository,
      sha: inputs.sha,
      "base-sha": inputs.baseSha,
      task: inputs.task,
      "evaluation-key": inputs.evaluationKey,
      ...(inputs.runner ? { runner: inputs.runner } : {}),
    },
    return_run_details: true,
  });
  const data = res.data as { workflow_run_id?: number; html_url?: string } | undefined;
  if (res.status !== 200 || typeof data?.workflow_run_id !== "number") {
    throw new Error(`GitHub accepted the dispatch of ${ev.repository}/${ev.workflow} but returned no run id (status ${res.status}); it may not support return_run_details`);
  }
  return { runId: data.workflow_run_id, htmlUrl: data.html_url ?? "" };
}

/** What the sweep needs of an evaluator run: whether it ended, how, and its page. */
export interface EvaluatorRunState {
  id: number;
  status: string;
  conclusion: string | null;
  htmlUrl: string;
}

/** The state of an evaluator run, asked when its webhook may have been lost; null when the run no longer exists. */
export async function getEvaluatorRun(gh: GitHubClient, evaluatorRepo: string, runId: number): Promise<EvaluatorRunState | null> {
  try {
    const { data } = await gh.rest.actions.getWorkflowRun({ ...repoRef(evaluatorRepo), run_id: runId });
    return { id: data.id, status: data.status ?? "unknown", conclusion: data.conclusion ?? null, htmlUrl: data.html_url };
  } catch (e) {
    if ((e as { status?: number }).status === 404) return null;
    throw e;
  }
}

/**
 * A run of the evaluator workflow dispatched at or after `since` whose name carries this
 * evaluation key (the example workflow's `run-name: probegate <task> <evaluation-key>`), so a run
 * whose dispatch answer was lost — the app died between GitHub starting it and recording its id —
 * is found again instead of dispatched twice. Null when there is none.
 */
export async function findDispatchedRun(gh: GitHubClient, ev: Evaluator, evaluationKey: string, since: Date): Promise<{ runId: number; htmlUrl: string } | null> {
  const { data } = await gh.rest.actions.listWorkflowRuns({
    ...repoRef(ev.repository),
    workflow_id: ev.workflow,
    event: "workflow_dispatch",
    created: `>=${since.toISOString().replace(/\.\d{3}Z$/, "Z")}`,
    per_page: 100,
  });
  const run = data.workflow_runs.find((r) => (r.display_title ?? "").split(/\s+/).includes(evaluationKey));
  return run ? { runId: run.id, htmlUrl: run.html_url } : null;
}

/** Cancels an evaluator run; a run that already finished (409) is left as it is. */
export async function cancelEvaluation(gh: GitHubClient, evaluatorRepo: string, runId: number): Promise<"cancelled" | "already-finished"> {
  try {
    await gh.rest.actions.cancelWorkflowRun({ ...repoRef(evaluatorRepo), run_id: runId });
    return "cancelled";
  } catch (e) {
    if ((e as { status?: number }).status === 409) return "already-finished";
    throw e;
  }
}

/** The result artifact of a run, downloaded as zip bytes; a reason instead when there is none to read. */
export async function downloadResultArtifact(gh: GitHubClient, evaluatorRepo: string, runId: number): Promise<{ ok: true; zip: Uint8Array } | { ok: false; problem: string }> {
  const artifacts = await gh.paginate(gh.rest.actions.listWorkflowRunArtifacts, { ...repoRef(evaluatorRepo), run_id: runId, name: RESULT_ARTIFACT, per_page: 100 });
  const artifact = artifacts.find((a) => a.name === RESULT_ARTIFACT && !a.expired);
  if (!artifact) return { ok: false, problem: `run ${runId} has no unexpired artifact named \`${RESULT_ARTIFACT}\`` };
  if (artifact.size_in_bytes > RESULT_MAX_BYTES) return { ok: false, problem: `the \`${RESULT_ARTIFACT}\` artifact is ${artifact.size_in_bytes} bytes, more than a result can be (${RESULT_MAX_BYTES})` };
  const { data } = await gh.rest.actions.downloadArtifact({ ...repoRef(evaluatorRepo), artifact_id: artifact.id, archive_format: "zip" });
  return { ok: true, zip: new Uint8Array(data as ArrayBuffer) };
}
