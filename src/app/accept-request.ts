import { unaccepted } from "../core/acceptance.js";
import { detectAgent } from "../core/agent-detect.js";
import { acceptMatches } from "../core/comment-command.js";
import type { GitHubClient, RepoRef } from "../github/client.js";
import { repoPermission, replyOnThread } from "../github/pull-request-facts.js";
import { loadRepoConfig } from "../github/repo-config.js";
import { acceptancesOf, recordAcceptance } from "../store/acceptances.js";
import { evaluationsOfPr, probeFailures } from "../store/dispatch-context.js";
import type { EvaluationRecord } from "../store/evaluations.js";
import type { AppDeps } from "./deps.js";
import { reconcludeGate } from "./gate.js";
import { pullRequestFacts } from "./plan.js";

/** `/probegate accept <check-id> <reason>` as the comment handler read it. */
export interface AcceptAsk {
  repo: RepoRef;
  pr: number;
  task: string | null;
  checkId: string;
  reason: string;
  requester: { login: string; type: string | null };
  isEdited: boolean;
  commentId: number;
}

const WRITERS = new Set(["admin", "maintain", "write"]);

/**
 * A measured difference the change means to make (a feature that adds a collective) accepted for
 * the PR's current head by someone with write permission, never the agent. The signed result is
 * left as it is; the acceptance is stored with who and why, and once every failed check of the
 * evaluation is accepted its check run and the gate pass, saying so. A new push needs a new one.
 */
export async function acceptDifference(gh: GitHubClient, deps: AppDeps, ask: AcceptAsk): Promise<void> {
  const thread = { ...ask.repo, number: ask.pr };
  const who = `@${ask.requester.login}`;
  const refuse = (why: string) => replyOnThread(gh, thread, `${who}: ${why}`);
  if (ask.isEdited) return refuse("commands in edited comments are ignored. Post `/probegate accept …` as a new comment.");
  const { data: pull } = await gh.rest.pulls.get({ ...ask.repo, pull_number: ask.pr });
  const pr = pullRequestFacts(pull);
  const loaded = await loadRepoConfig(gh, { ...ask.repo, defaultBranch: pr.defaultBranch });
  const agents = loaded.kind === "ok" ? loaded.config.agents : undefined;
  const permission = await repoPermission(gh, ask.repo, ask.requester.login);
  const requesterAgent = detectAgent({ author: ask.requester }, agents);
  const prAgent = detectAgent({ author: pr.author, headRef: pr.headRef, labels: pr.labels }, agents);
  if (requesterAgent !== null || (prAgent !== null && ask.requester.login.toLowerCase() === pr.author.login.toLowerCase())) {
    return refuse("an agent cannot accept a difference its own change makes; a maintainer with write permission can.");
  }
  if (!WRITERS.has(permission)) return refuse(`accepting a measured difference needs write permission on this repository; you have \`${permission}\`.`);
  // Each rejected evaluation of this head with the failed checks the id (or `prefix*` pattern) names.
  const candidates = evaluationsOfPr(deps.db, { ...ask.repo, pr: ask.pr })
    .filter((e) => e.headSha === pr.headSha && (ask.task === null || e.task === ask.task) && e.state === "completed" && e.verdict === "probe-rejected")
    .map((e) => ({ e, ids: probeFailures(deps.db, e.key, e.attempt).filter((f) => f.status === "failed" && acceptMatches(ask.checkId, f.probeId)).map((f) => f.probeId) }))
    .filter((c) => c.ids.length > 0);
  const head = pr.headSha.slice(0, 7);
  if (candidates.length === 0) return refuse(`no failed check \`${ask.checkId}\`${ask.task ? ` of task \`${ask.task}\`` : ""} on the current head \`${head}\`; nothing was accepted. (An acceptance holds for one head: after a push, accept again.)`);
  if (candidates.length > 1) return refuse(`\`${ask.checkId}\` failed in ${candidates.length} tasks (${candidates.map((c) => c.e.task).join(", ")}); write \`/probegate accept <task>/${ask.checkId} <reason>\`.`);
  // A pattern is stored as the checks it named now: a later attempt's new failures need a new acceptance.
  const { e, ids } = candidates[0] as { e: EvaluationRecord; ids: string[] };
  for (const checkId of ids) recordAcceptance(deps.db, { evaluationKey: e.key, attempt: e.attempt, headSha: e.headSha, checkId, by: ask.requester.login, reason: ask.reason, commentId: ask.commentId, at: deps.now() });
  const what = ask.checkId.endsWith("*") ? `${ids.length} check${ids.length === 1 ? "" : "s"} matching \`${ask.checkId}\` (${ids.slice(0, 10).map((i) => `\`${i}\``).join(", ")}${ids.length > 10 ? ", …" : ""})` : `\`${ask.checkId}\``;
  const accepted = acceptancesOf(deps.db, e.key, e.attempt);
  const open = unaccepted(probeFailures(deps.db, e.key, e.attempt), accepted.map((a) => a.checkId));
  const lines = accepted.map((a) => `- \`${a.checkId}\`: accepted by @${a.by} — ${a.reason}`);
  if (open.length > 0 || e.checkRunId === null) {
    return replyOnThread(gh, thread, `${who} accepted ${what} of \`${e.task}\` for \`${head}\`. ${open.length} other check${open.length === 1 ? "" : "s"} still fail${open.length === 1 ? "s" : ""}, so the check stays failed.`);
  }
  const { data: run } = await gh.rest.checks.get({ ...ask.repo, check_run_id: e.checkRunId });
  const before = run.output?.summary ?? "";
  await gh.rest.checks.update({
    ...ask.repo,
    check_run_id: e.checkRunId,
    conclusion: "success",
    output: {
      title: `Accepted: ${accepted.length} measured difference${accepted.length === 1 ? "" : "s"} (${run.output?.title ?? "probe-rejected"})`.slice(0, 250),
      summary: `**Passed as accepted.** Every failed check of this head was accepted by someone with write permission; the signed result still says probe-rejected.\n\n${lines.join("\n")}\n\n---\n\n${before}`.slice(0, 65_000),
    },
  });
  await reconcludeGate(gh, deps, { ...ask.repo, headSha: e.headSha });
  return replyOnThread(gh, thread, `${who} accepted ${what} of \`${e.task}\` for \`${head}\`: every failed check of it is now accepted, and its check run passes as accepted.`);
}
