import type { Context } from "probot";
import { CONFIG_CHECK_NAME, configErrorOutput } from "../core/app-check-outputs.js";
import { completeCheckRun, ensureCheckRun } from "../github/check-runs.js";
import type { GitHubClient, RepoRef } from "../github/client.js";
import { probeSetVersion } from "../github/evaluator.js";
import { CONFIG_PATH, type RepoConfig } from "../github/repo-config.js";
import { installationIdOf, type AppDeps } from "./deps.js";
import { openGate, passGate } from "./gate.js";
import { cancelForClosedPr, startEvaluation, supersedeOlder, type StartOutcome } from "./evaluation-runner.js";
import { planEvaluations, pullRequestFacts, type PullRequestFacts } from "./plan.js";
import { budgetWait, policyOf, runnerFor } from "./evaluation-options.js";
import { recordEvaluationRound } from "../store/evaluation-policy.js";
import { warnAssignmentsRoutedByPaths } from "./route-warnings.js";

/** The `pull_request` actions that can start an evaluation. */
export const PULL_REQUEST_ACTIONS = ["opened", "synchronize", "reopened", "ready_for_review", "labeled", "closed"] as const;

/**
 * Plans and starts the evaluations of one PR head. Shared by PR events, reruns and merge groups:
 * `rerun` starts finished evaluations of the head again. A head over the PR's evaluation budget is
 * queued to start when the budget frees up (reruns, asked by maintainers and limited on their own,
 * and merge groups do not count). Returns what happened to each target.
 */
export async function evaluateHead(
  gh: GitHubClient,
  deps: AppDeps,
  repo: RepoRef,
  pr: PullRequestFacts,
  opts: { installationId: number; rerun: boolean; deliveryId: string | null; onlyTask?: string | null; config?: RepoConfig; budgetExempt?: boolean },
): Promise<{ kind: "skipped"; why: string } | { kind: "config-error" } | { kind: "started"; outcomes: Array<{ task: string; key: string; outcome: StartOutcome }> }> {
  const plan = await planEvaluations(gh, deps, repo, pr, opts.config);
  if (plan.kind === "skip") {
    // A gated repository's required check must pass on PRs probegate has nothing to say about.
    if (plan.config?.gate && !opts.rerun) await passGate(gh, repo, pr.headSha, plan.why);
    return { kind: "skipped", why: plan.why };
  }
  if (plan.kind === "config-error") {
    // One check run per head and broken config; the external id makes a redelivery find it.
    const check = await ensureCheckRun(gh, { ...repo, name: CONFIG_CHECK_NAME, headSha: pr.headSha, externalId: `config:${pr.headSha}` }, {
      status: "in_progress",
      title: "Reading .github/probegate.yml",
      summary: "",
    }, { pendingOnly: true });
    if (check.created) await completeCheckRun(gh, { ...repo, checkRunId: check.id }, configErrorOutput(CONFIG_PATH, plan.ref, plan.issues));
    return { kind: "config-error" };
  }
  const targets = opts.onlyTask ? plan.targets.filter((t) => t.id === opts.onlyTask) : plan.targets;
  if (targets.length === 0) return { kind: "skipped", why: `task ${opts.onlyTask} is not one this PR maps to (it maps to ${plan.targets.map((t) => t.id).join(", ")})` };
  const probeSet = await probeSetVersion(gh, plan.evaluator);
  const head = { ...repo, pr: pr.number, headSha: pr.headSha };
  const deferUntil = opts.rerun || opts.budgetExempt ? null : budgetWait(deps, head, plan.config);
  const policy = policyOf(plan.config);
  const outcomes = [];
  for (const t of targets) {
    const { runner, blocked } = await runnerFor(gh, plan.config, plan.evaluator, probeSet, t);
    const { key, outcome } = await startEvaluation(gh, deps, {
      repo,
      pr: pr.number,
      headSha: pr.headSha,
      baseSha: pr.baseSha,
      installationId: opts.installationId,
      agent: plan.agent.agent,
      task: t.id,
      why: [...t.why, `agent ${plan.agent.agent} detected by ${plan.agent.via} "${plan.agent.matched}"`],
      evaluator: plan.evaluator,
      probeSet,
      timeoutS: plan.timeoutS,
      rerun: opts.rerun,
      deliveryId: opts.deliveryId,
      policy,
      runner,
      deferUntil,
      blocked,
    });
    outcomes.push({ task: t.id, key, outcome });
  }
  if (!opts.budgetExempt && outcomes.some((o) => o.outcome === "dispatched")) recordEvaluationRound(deps.db, head, deps.now());
  // After the dispatches, so an advisory read of task.yml never delays or blocks an evaluation.
  await warnAssignmentsRoutedByPaths(gh, deps, { ...repo, headSha: pr.headSha }, plan, probeSet);
  if (plan.config.gate) await openGate(gh, deps, repo, pr.number, pr.headSha);
  return { kind: "started", outcomes };
}

/**
 * `pull_request` opened / synchronize / reopened / ready_for_review / labeled start or resume the
 * head's evaluations; `closed` (merged or not) cancels the pending ones, and `reopened` starts them
 * again.
 */
export async function onPullRequest(context: Context<"pull_request">, deps: AppDeps): Promise<void> {
  const payload = context.payload;
  const repo = { owner: payload.repository.owner.login, repo: payload.repository.name };
  const gh = context.octokit as unknown as GitHubClient;
  const pr = pullRequestFacts(payload.pull_request);
  if (payload.action === "closed") {
    const cancelled = await cancelForClosedPr(gh, deps, repo, pr.number, payload.pull_request.merged === true);
    context.log.info({ pr: pr.number, cancelled: cancelled.map((e) => e.key) }, `PR #${pr.number} closed: ${cancelled.length} pending evaluation(s) cancelled`);
    return;
  }
  // A newer head replaces older ones whatever this head turns out to need.
  await supersedeOlder(gh, deps, repo, pr.number, pr.headSha);
  if (payload.pull_request.state !== "open" || payload.pull_request.draft) {
    context.log.debug(`PR #${pr.number}: ${payload.pull_request.draft ? "draft" : "closed"}, not evaluated`);
    return;
  }
  const installationId = installationIdOf(payload, context.id);
  const done = await evaluateHead(gh, deps, repo, pr, { installationId, rerun: false, deliveryId: context.id });
  context.log.info({ pr: pr.number, done }, `PR #${pr.number} ${pr.headSha.slice(0, 7)}: ${done.kind}`);
}
