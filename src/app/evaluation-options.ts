import type { AppConfig, RoutedTarget } from "../core/app-config.js";
import { BUDGET_WINDOW_MS, decideBudget } from "../core/app-policy/evaluation-budget.js";
import { chooseRunner } from "../core/app-policy/runner-route.js";
import type { GitHubClient, RepoRef } from "../github/client.js";
import type { Evaluator } from "../github/evaluator.js";
import { taskGpus, TaskGpusError } from "../github/task-index.js";
import { recentRounds, roundRecorded, type EvaluationPolicy } from "../store/evaluation-policy.js";
import type { AppDeps } from "./deps.js";

/** The repository's rules for its evaluations, as its config says now. */
export function policyOf(config: AppConfig): EvaluationPolicy {
  return { allowUnsandboxed: config.allowUnsandboxed?.reason ?? null, agentDetail: config.feedback.agentDetail };
}

/**
 * Whether this PR head must wait for the PR's evaluation budget, and until when. A head already
 * counted (a redelivery, a reopened PR) is not counted again.
 */
export function budgetWait(deps: AppDeps, head: RepoRef & { pr: number; headSha: string }, config: AppConfig): { nextAt: Date; used: number; limit: number } | null {
  if (roundRecorded(deps.db, head)) return null;
  const now = deps.now();
  const limit = config.budget.perPrPerHour;
  const d = decideBudget(recentRounds(deps.db, head, now, BUDGET_WINDOW_MS), now, limit);
  return d.allowed ? null : { nextAt: d.nextAt, used: d.used, limit };
}

/**
 * The runner a target is dispatched to, from the repository's `runners:` map and the target's GPU
 * count: the route's `gpus:` when it declares one, else the task's task.yml in the evaluator
 * repository at the probe-set commit. No map: null (the workflow's own default). A count that
 * cannot be known or that no runner fits blocks the evaluation, naming why.
 */
export async function runnerFor(
  gh: GitHubClient,
  config: AppConfig,
  evaluator: Evaluator,
  probeSet: string,
  target: RoutedTarget,
): Promise<{ runner: string | null; blocked: { title: string; problems: string[] } | null }> {
  if (!config.runners) return { runner: null, blocked: null };
  const blocked = (why: string) => ({ runner: null, blocked: { title: "No runner for this task", problems: [why] } });
  let gpus = target.gpus;
  if (gpus === undefined) {
    if (target.kind === "suite") return blocked(`probe suite ${target.id} has no task.yml to read its GPU count from: add \`gpus:\` to its route in .github/probegate.yml`);
    try {
      gpus = await taskGpus(gh, { ...evaluator, tasksPath: config.evaluator?.tasksPath ?? "tasks" }, probeSet, target.id);
    } catch (e) {
      if (e instanceof TaskGpusError) return blocked(e.message);
      throw e;
    }
  }
  const choice = chooseRunner(gpus, config.runners);
  return choice.ok ? { runner: choice.label, blocked: null } : blocked(choice.why);
}
