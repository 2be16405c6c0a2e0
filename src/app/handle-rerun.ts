import type { Context } from "probot";
import { detectAgent } from "../core/agent-detect.js";
import { CommandError, parseCommentCommand } from "../core/comment-command.js";
import { renderExplain } from "../core/probe-explain.js";
import { decideRerun, RERUN_WINDOW_MS } from "../core/rerun-policy.js";
import type { GitHubClient, RepoRef } from "../github/client.js";
import { acknowledgeComment, repoPermission, replyOnThread } from "../github/pull-request-facts.js";
import { loadRepoConfig } from "../github/repo-config.js";
import { evaluationsOfPr, prsEvaluatedAtHead, probeFailures } from "../store/dispatch-context.js";
import { getEvaluation } from "../store/evaluations.js";
import { recentRerunTimes, recordRerunAttempt, type RerunSource } from "../store/reruns.js";
import { installationIdOf, type AppDeps } from "./deps.js";
import { evaluateHead } from "./handle-pull-request.js";
import { pullRequestFacts } from "./plan.js";

/** Who asked for a rerun of which PR, and how. */
interface RerunAsk {
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
async function rerun(gh: GitHubClient, deps: AppDeps, ask: RerunAsk): Promise<void> {
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

/**
 * `check_suite` rerequested: "Re-run all checks" on the app's suite of a commit. Every PR of this
 * repository at that commit whose evaluations the store has is rerun for all its tasks, through the
 * same policy as the check run's button (permission, agent, rate limit; every request recorded).
 * The PRs are the payload's `pull_requests` that belong to this repository; GitHub lists none for a
 * PR from a fork, and then (or when every listed PR is another repository's) the store's
 * evaluations of this repository at that head name them.
 *
 * A suite is for one commit and `rerun()` works on the PR's current head, so the suite's head SHA
 * goes with the request: if the PR has moved on, the rerun is refused with a reply (reason
 * `stale-head`) rather than evaluating a commit other than the one whose checks were re-run. A
 * suite of which the store knows no evaluation (nothing probegate evaluated, e.g. only the config
 * check) is ignored with a log line: there is nothing of ours to rerun.
 */
export async function onCheckSuiteRerun(context: Context<"check_suite">, deps: AppDeps): Promise<void> {
  const { payload } = context;
  const repo = { owner: payload.repository.owner.login, repo: payload.repository.name };
  const headSha = payload.check_suite.head_sha;
  const listed = payload.check_suite.pull_requests.filter((p) => p.base.repo.id === payload.repository.id).map((p) => p.number);
  const candidates = listed.length > 0 ? listed : prsEvaluatedAtHead(deps.db, { ...repo, headSha });
  const prs = [...new Set(candidates)]
    .sort((a, b) => a - b)
    .filter((pr) => evaluationsOfPr(deps.db, { ...repo, pr }).some((e) => e.headSha === headSha));
  if (prs.length === 0) {
    context.log.info(`check suite ${payload.check_suite.id} of ${repo.owner}/${repo.repo}@${headSha.slice(0, 7)} rerequested: no evaluation of that head in the store; ignored`);
    return;
  }
  for (const pr of prs) await rerunFromChecks(context, deps, { repo, pr, task: null, headSha });
}

/** Sends `/probegate explain`'s answer: the failed probe categories of the PR's current head. */
async function explain(gh: GitHubClient, deps: AppDeps, repo: RepoRef, prNumber: number): Promise<void> {
  const { data: pull } = await gh.rest.pulls.get({ ...repo, pull_number: prNumber });
  const ofHead = evaluationsOfPr(deps.db, { ...repo, pr: prNumber }).filter((e) => e.headSha === pull.head.sha);
  const body = renderExplain(
    ofHead.map((e) => ({ task: e.task, headSha: e.headSha, state: e.state, verdict: e.verdict, failures: e.verdict ? probeFailures(deps.db, e.key, e.attempt) : [] })),
  );
  await replyOnThread(gh, { ...repo, number: prNumber }, body);
}

/** `issue_comment` created / edited: `/probegate rerun [task]` and `/probegate explain`. */
export async function onIssueComment(context: Context<"issue_comment">, deps: AppDeps): Promise<void> {
  const { payload } = context;
  const repo = { owner: payload.repository.owner.login, repo: payload.repository.name };
  const gh = context.octokit as unknown as GitHubClient;
  const thread = { ...repo, number: payload.issue.number };
  let command;
  try {
    command = parseCommentCommand(payload.comment.body ?? "");
  } catch (e) {
    if (!(e instanceof CommandError)) throw e;
    if (payload.action === "created") await replyOnThread(gh, thread, `@${payload.comment.user?.login}: ${e.reply}`);
    return;
  }
  if (!command) return;
  if (!payload.issue.pull_request) {
    await replyOnThread(gh, thread, `@${payload.comment.user?.login}: probegate commands work on pull requests only; #${payload.issue.number} is an issue.`);
    return;
  }
  const installationId = installationIdOf(payload, context.id);
  if (command.kind === "explain") {
    if (payload.action === "edited") {
      await replyOnThread(gh, thread, `@${payload.comment.user?.login}: commands in edited comments are ignored. Post \`/probegate explain\` as a new comment.`);
      return;
    }
    await explain(gh, deps, repo, payload.issue.number);
    return;
  }
  await rerun(gh, deps, {
    repo,
    pr: payload.issue.number,
    task: command.task,
    requester: { login: payload.comment.user?.login ?? "ghost", type: payload.comment.user?.type ?? null },
    source: "comment",
    isEdited: payload.action === "edited",
    installationId,
    commentId: payload.comment.id,
    deliveryId: context.id,
  });
}

/** `check_run` rerequested, or its "Re-run probes" button (requested_action `rerun`). */
export async function onCheckRunRerun(context: Context<"check_run">, deps: AppDeps): Promise<void> {
  const { payload } = context;
  if (payload.action === "requested_action" && payload.requested_action?.identifier !== "rerun") return;
  const key = payload.check_run.external_id;
  const e = key ? getEvaluation(deps.db, key) : null;
  if (!e || e.pr === null) return;
  // The button sits on one commit's check run: if the PR has moved on, that is not what would run.
  await rerunFromChecks(context, deps, { repo: { owner: e.owner, repo: e.repo }, pr: e.pr, task: e.task, headSha: e.headSha });
}

/** A rerun asked from GitHub's checks UI (a check run's or a suite's re-run), by the event's sender, for one commit. */
function rerunFromChecks(
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
