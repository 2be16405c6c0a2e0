import type { Context } from "probot";
import { detectAgent } from "../core/agent-detect.js";
import { decideRerun, RERUN_WINDOW_MS } from "../core/rerun-policy.js";
import type { GitHubClient, RepoRef } from "../github/client.js";
import { acknowledgeComment, repoPermission, replyOnThread } from "../github/pull-request-facts.js";
import { loadRepoConfig } from "../github/repo-config.js";
import { recentRerunTimes, recordRerunAttempt, type RerunSource } from "../store/reruns.js";
import { installationIdOf, type AppDeps } from "./deps.js";
import { evaluateHead } from "./handle-pull-request.js";
import { pullRequestFacts } from "./plan.js";

/** Who asked for a rerun of which PR, and how. */
export interface RerunAsk {
  repo: RepoRef;
  pr: number;
  task: string | null;
  requester: { login: string; type?: string | null };
  source: RerunSource;
  isEdited: boolean;
  installationId: number;
  commentId: number | null;
  deliveryId: string;
  /**
   * The head the request is about, when it names one (a check suite's head SHA). If the PR's head
   * has moved on since, the request is refused: it asked about a commit that is no longer the PR.
   */
  headSha?: string;
}

/**
 * A rerun of the PR's current head, asked by a comment, the check run's button or its check suite.
 * GitHub is asked for the requester's permission; the policy refuses edited comments, the agent
 * itself, users without write permission and a PR over its rate limit. A request about a named
 * head (`headSha`, a check suite's) that is no longer the PR's is refused first, before the config
 * or the permission is asked for. Every request is recorded, accepted or not.
 */
export async function rerun(gh: GitHubClient, deps: AppDeps, ask: RerunAsk): Promise<void> {
  const thread = { ...ask.repo, number: ask.pr };
  const record = (accepted: boolean, reason: string | null, evaluationKeys: string[] = []) =>
    recordRerunAttempt(deps.db, { ...ask.repo, pr: ask.pr, task: ask.task, requestedBy: ask.requester.login, source: ask.source, accepted, reason, evaluationKeys }, deps.now());
  const refuse = async (reason: string, reply: string) => {
    record(false, reason);
    await replyOnThread(gh, thread, reply);
  };
  const now = deps.now();
  if (ask.isEdited) {
    // Decided before asking GitHub anything: an edit never replays a command.
    const d = decideRerun({ commenter: ask.requester.login, permission: "none", isAgent: false, isEdited: true, recentAttempts: [], now, limit: { perPrPerHour: 1 } });
    if (!d.allowed) await refuse(d.reason, d.reply);
    return;
  }
  const { data: pull } = await gh.rest.pulls.get({ ...ask.repo, pull_number: ask.pr });
  const pr = pullRequestFacts(pull);
  if (pull.state !== "open") {
    // A closed PR's pending evaluations were cancelled; reopening it evaluates its head again.
    await refuse("closed", `@${ask.requester.login}: nothing to rerun: this pull request is ${pull.merged ? "merged" : "closed"}. Reopen it to have its head evaluated again.`);
    return;
  }
  if (ask.headSha !== undefined && ask.headSha !== pr.headSha) {
    await refuse(
      "stale-head",
      `@${ask.requester.login}: nothing to rerun: those checks are for \`${ask.headSha.slice(0, 7)}\`, which is no longer the head of this PR (it is \`${pr.headSha.slice(0, 7)}\` now). Re-run the checks of the current head.`,
    );
    return;
  }
  const loaded = await loadRepoConfig(gh, { ...ask.repo, defaultBranch: pr.defaultBranch });
  if (loaded.kind !== "ok") {
    await refuse("config", `@${ask.requester.login}: cannot rerun: .github/probegate.yml on \`${loaded.ref}\` is ${loaded.kind === "missing" ? "missing" : "invalid (see the probegate / config check)"}.`);
    return;
  }
  const permission = await repoPermission(gh, ask.repo, ask.requester.login);
  const requesterAgent = detectAgent({ author: ask.requester }, loaded.config.agents);
  const prAgent = detectAgent({ author: pr.author, headRef: pr.headRef, labels: pr.labels }, loaded.config.agents);
  const isAgent = requesterAgent !== null || (prAgent !== null && ask.requester.login.toLowerCase() === pr.author.login.toLowerCase());
  const decision = decideRerun({
    commenter: ask.requester.login,
    permission,
    isAgent,
    isEdited: false,
    recentAttempts: recentRerunTimes(deps.db, { ...ask.repo, pr: ask.pr }, now, RERUN_WINDOW_MS),
    now,
    limit: loaded.config.reruns,
  });
  if (!decision.allowed) {
    await refuse(decision.reason, decision.reply);
    return;
  }
  const done = await evaluateHead(gh, deps, ask.repo, pr, { installationId: ask.installationId, rerun: true, deliveryId: ask.deliveryId, onlyTask: ask.task, config: loaded });
  if (done.kind !== "started") {
    const why = done.kind === "skipped" ? done.why : ".github/probegate.yml is invalid (see the probegate / config check)";
    await refuse(done.kind === "skipped" ? "not-routed" : "config", `@${ask.requester.login}: nothing to rerun: ${why}.`);
    return;
  }
  record(true, null, done.outcomes.map((o) => o.key));
  if (ask.commentId !== null) await acknowledgeComment(gh, ask.repo, ask.commentId);
}

/** A rerun asked from GitHub's checks UI (a check run's or a suite's re-run), by the event's sender, for one commit. */
export function rerunFromChecks(
  context: Context<"check_run"> | Context<"check_suite">,
  deps: AppDeps,
  at: { repo: RepoRef; pr: number; task: string | null; headSha: string },
): Promise<void> {
  const { payload } = context;
  return rerun(context.octokit as unknown as GitHubClient, deps, {
    ...at,
    requester: { login: payload.sender.login, type: payload.sender.type },
    source: "check-run",
    isEdited: false,
    installationId: installationIdOf(payload, context.id),
    commentId: null,
    deliveryId: context.id,
  });
}
