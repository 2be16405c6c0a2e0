import type { Context } from "probot";
import { decideMergeGroup, mergeGroupPassedOutput, mergeQueuePr } from "../core/app-policy/merge-group.js";
import { GATE_CHECK_NAME, gateExternalId } from "../core/gate-check.js";
import { completeCheckRun, ensureCheckRun } from "../github/check-runs.js";
import type { GitHubClient } from "../github/client.js";
import { mergeGroupCommits } from "../github/merge-group.js";
import { loadRepoConfig } from "../github/repo-config.js";
import { passedGatesWithTrees } from "../store/gates.js";
import { installationIdOf, type AppDeps } from "./deps.js";
import { evaluateHead } from "./handle-pull-request.js";
import { pullRequestFacts } from "./plan.js";

/**
 * `merge_group.checks_requested`: a merge queue asks for the required checks on its group commit.
 * In a gated repository, the gate on the group head passes at once when every commit the queue
 * made holds the tree of a PR head whose gate passed (nothing unjudged is merged); otherwise the
 * group head is evaluated as the queue's top PR would be (its routes, its agent), outside the
 * PR's evaluation budget. Without `gate: true`, nothing is posted: no check of ours is required.
 */
export async function onMergeGroup(context: Context<"merge_group">, deps: AppDeps): Promise<void> {
  const { merge_group: group, repository } = context.payload;
  if (!repository) throw new Error(`delivery ${context.id}: merge_group event without a repository`);
  const repo = { owner: repository.owner.login, repo: repository.name };
  const gh = context.octokit as unknown as GitHubClient;
  const config = await loadRepoConfig(gh, { ...repo, defaultBranch: repository.default_branch });
  if (config.kind !== "ok" || !config.config.gate) {
    context.log.info(`merge group ${group.head_sha.slice(0, 7)}: no gate configured; nothing to check`);
    return;
  }
  const commits = await mergeGroupCommits(gh, repo, group.base_sha, group.head_sha);
  const decision = decideMergeGroup(commits, passedGatesWithTrees(deps.db, repo, commits.map((c) => c.tree)));
  if (decision.kind === "pass") {
    const check = await ensureCheckRun(gh, { ...repo, name: GATE_CHECK_NAME, headSha: group.head_sha, externalId: gateExternalId(group.head_sha) }, { status: "in_progress", title: "Deciding", summary: "" });
    if (check.created) await completeCheckRun(gh, { ...repo, checkRunId: check.id }, mergeGroupPassedOutput(decision.matched));
    return;
  }
  const number = mergeQueuePr(group.head_ref);
  if (number === null) throw new Error(`merge group ${group.head_sha.slice(0, 7)}: its branch ${group.head_ref} does not name a pull request (gh-readonly-queue/<base>/pr-<number>-<sha>)`);
  const { data: pull } = await gh.rest.pulls.get({ ...repo, pull_number: number });
  // The group commit is judged against what the queue built it on, not the PR's own base.
  const facts = { ...pullRequestFacts(pull), headSha: group.head_sha, baseSha: group.base_sha };
  const done = await evaluateHead(gh, deps, repo, facts, { installationId: installationIdOf(context.payload, context.id), rerun: false, deliveryId: context.id, config, budgetExempt: true });
  context.log.info({ done, unmatched: decision.unmatched }, `merge group ${group.head_sha.slice(0, 7)} (PR #${number}): ${done.kind}`);
}
