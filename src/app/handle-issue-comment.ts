import type { Context } from "probot";
import { CommandError, parseCommentCommand } from "../core/comment-command.js";
import { renderExplain } from "../core/probe-explain.js";
import type { GitHubClient, RepoRef } from "../github/client.js";
import { replyOnThread } from "../github/pull-request-facts.js";
import { evaluationsOfPr, probeFailures } from "../store/dispatch-context.js";
import { getEvaluationPolicy } from "../store/evaluation-policy.js";
import { installationIdOf, type AppDeps } from "./deps.js";
import { acceptDifference } from "./accept-request.js";
import { rerun } from "./rerun-request.js";

/**
 * Sends `/probegate explain`'s answer: the failed probe categories of the PR's current head. The
 * reply is on the PR's thread, which the agent reads, so it shows no more than the evaluation's
 * check run may (its policy's detail level), whoever asked.
 */
async function explain(gh: GitHubClient, deps: AppDeps, repo: RepoRef, prNumber: number): Promise<void> {
  const { data: pull } = await gh.rest.pulls.get({ ...repo, pull_number: prNumber });
  const ofHead = evaluationsOfPr(deps.db, { ...repo, pr: prNumber }).filter((e) => e.headSha === pull.head.sha);
  const body = renderExplain(
    ofHead.map((e) => ({
      task: e.task,
      headSha: e.headSha,
      state: e.state,
      verdict: e.verdict,
      failures: e.verdict ? probeFailures(deps.db, e.key, e.attempt) : [],
      detail: getEvaluationPolicy(deps.db, e.key).agentDetail,
    })),
  );
  await replyOnThread(gh, { ...repo, number: prNumber }, body);
}

/** `issue_comment` created / edited: `/probegate rerun [task]`, `/probegate explain` and `/probegate accept <check-id> <reason>`. */
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
  if (command.kind === "accept") {
    await acceptDifference(gh, deps, {
      repo,
      pr: payload.issue.number,
      task: command.task,
      checkId: command.checkId,
      reason: command.reason,
      requester: { login: payload.comment.user?.login ?? "ghost", type: payload.comment.user?.type ?? null },
      isEdited: payload.action === "edited",
      commentId: payload.comment.id,
    });
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
