import type { RepoPermission } from "../core/rerun-policy.js";
import type { GitHubClient, RepoRef } from "./client.js";

/** The full messages of a PR's commits (GitHub lists at most 250), for `Co-authored-by` trailers. */
export async function commitMessages(gh: GitHubClient, pr: RepoRef & { number: number }): Promise<string[]> {
  const commits = await gh.paginate(gh.rest.pulls.listCommits, { owner: pr.owner, repo: pr.repo, pull_number: pr.number, per_page: 100 });
  return commits.map((c) => c.commit.message);
}

/** The commit a PR's base is at now (`base.sha`), for an evaluation queued before the store kept it. */
export async function pullRequestBase(gh: GitHubClient, pr: RepoRef & { number: number }): Promise<string> {
  const { data } = await gh.rest.pulls.get({ owner: pr.owner, repo: pr.repo, pull_number: pr.number });
  return data.base.sha;
}

/** The paths a PR changes (renames count by their new path), for path routes. */
export async function changedPaths(gh: GitHubClient, pr: RepoRef & { number: number }): Promise<string[]> {
  const files = await gh.paginate(gh.rest.pulls.listFiles, { owner: pr.owner, repo: pr.repo, pull_number: pr.number, per_page: 100 });
  return files.map((f) => f.filename);
}

const PERMISSIONS: ReadonlySet<string> = new Set(["admin", "maintain", "write", "triage", "read", "none"]);

/**
 * A user's permission on the repository, as GitHub answers it (never read from the webhook
 * payload). `role_name` distinguishes maintain and triage, which `permission` folds into write and
 * read; a user GitHub does not know as a collaborator has `none`.
 */
export async function repoPermission(gh: GitHubClient, repo: RepoRef, username: string): Promise<RepoPermission> {
  try {
    const { data } = await gh.rest.repos.getCollaboratorPermissionLevel({ ...repo, username });
    const role = data.role_name;
    if (role && PERMISSIONS.has(role)) return role as RepoPermission;
    return PERMISSIONS.has(data.permission) ? (data.permission as RepoPermission) : "none";
  } catch (e) {
    if ((e as { status?: number }).status === 404) return "none";
    throw e;
  }
}

/** Posts a comment on a PR or issue thread. */
export async function replyOnThread(gh: GitHubClient, thread: RepoRef & { number: number }, body: string): Promise<void> {
  await gh.rest.issues.createComment({ owner: thread.owner, repo: thread.repo, issue_number: thread.number, body });
}

/** Reacts 👀 to a comment: the command was accepted and is being acted on. */
export async function acknowledgeComment(gh: GitHubClient, repo: RepoRef, commentId: number): Promise<void> {
  await gh.rest.reactions.createForIssueComment({ ...repo, comment_id: commentId, content: "eyes" });
}
