import { CONFIG_CHECK_NAME } from "../core/app-check-outputs.js";
import type { AppConfig } from "../core/app-config.js";
import type { CheckRunOutput } from "../core/check-run-render.js";
import { completeCheckRun, ensureCheckRun } from "../github/check-runs.js";
import type { GitHubClient, RepoRef } from "../github/client.js";
import type { Evaluator } from "../github/evaluator.js";
import { CONFIG_PATH } from "../github/repo-config.js";
import { taskFacts } from "../github/task-index.js";
import type { AppDeps } from "./deps.js";

/**
 * The neutral `probegate / config` output for `paths:` routes that name assignment tasks: the
 * evaluations still run, but a PR against a moving main does not apply to a fixed base, so they
 * judge the PR by the task's own package and tests, not by the code the PR changes.
 */
export function assignmentRoutedByPathsOutput(tasks: ReadonlyArray<string>, taskFiles: ReadonlyArray<string>): CheckRunOutput {
  const names = tasks.map((t) => `\`${t}\``).join(", ");
  return {
    conclusion: "neutral",
    title: `A paths route names ${tasks.length === 1 ? "an assignment task" : `${tasks.length} assignment tasks`}: ${tasks.join(", ")}`.slice(0, 255),
    summary: [
      `\`${CONFIG_PATH}\` routes this PR by its changed files to ${names}, whose task.yml has a fixed base (${taskFiles.map((f) => `\`${f}\``).join(", ")}). An assignment task judges one asked-for change against its own base: a PR against a moving main does not apply to it, so its check run says little about the code this PR changes.`,
      "",
      "Route these paths to a repository gate (`base: { pr: true }`: the PR's own base, the repository's tests, head-vs-base probes), and reach the assignment by a label or the PR-body marker (docs/app-config.md, \"Which kind of task a route names\"). The evaluations were started as configured.",
    ].join("\n"),
    annotations: [],
  };
}

/**
 * Warns, once per head, when a `paths:` route chose an assignment task for this PR, reading each
 * such task's task.yml in the evaluator repository at the probe-set commit. Advisory: a task.yml
 * that cannot be read, or GitHub failing, is logged and warns nothing. Returns the tasks warned about.
 */
export async function warnAssignmentsRoutedByPaths(
  gh: GitHubClient,
  deps: AppDeps,
  head: RepoRef & { headSha: string },
  plan: { config: AppConfig; evaluator: Evaluator; pathRouted: ReadonlyArray<string> },
  probeSet: string,
): Promise<string[]> {
  if (plan.pathRouted.length === 0) return [];
  const tasksPath = (plan.config.evaluator?.tasksPath ?? "tasks").replace(/\/+$/, "");
  try {
    const assignments: string[] = [];
    for (const id of plan.pathRouted) {
      if (!(await taskFacts(gh, { ...plan.evaluator, tasksPath }, probeSet, id)).repositoryGate) assignments.push(id);
    }
    if (assignments.length === 0) return [];
    // Any config check of this head (a redelivery's, or one already completed) means it was said.
    const check = await ensureCheckRun(gh, { ...head, name: CONFIG_CHECK_NAME, headSha: head.headSha, externalId: `config:${head.headSha}` }, { status: "in_progress", title: "Reading .github/probegate.yml", summary: "" });
    const files = assignments.map((id) => `${plan.evaluator.repository}/${tasksPath}/${id}/task.yml`);
    if (check.created) await completeCheckRun(gh, { ...head, checkRunId: check.id }, assignmentRoutedByPathsOutput(assignments, files));
    return assignments;
  } catch (e) {
    deps.log.warn({ head: head.headSha }, `could not check whether the paths routes of ${head.owner}/${head.repo}@${head.headSha.slice(0, 7)} name repository gates: ${(e as Error).message}`);
    return [];
  }
}
