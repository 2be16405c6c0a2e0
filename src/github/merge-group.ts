import type { GroupCommit } from "../core/app-policy/merge-group.js";
import type { GitHubClient, RepoRef } from "./client.js";

/**
 * The commits a merge queue added on the group's base: the first-parent chain from the head back
 * to the base, oldest first, each with its tree. (A PR merged with a merge commit brings its own
 * commits in as second parents; those were never candidates for merging on their own.) Throws
 * when the chain does not reach the base within the compared commits.
 */
export async function mergeGroupCommits(gh: GitHubClient, repo: RepoRef, baseSha: string, headSha: string): Promise<GroupCommit[]> {
  const { data } = await gh.rest.repos.compareCommitsWithBasehead({ ...repo, basehead: `${baseSha}...${headSha}`, per_page: 100 });
  const bySha = new Map(data.commits.map((c) => [c.sha, c]));
  const chain: GroupCommit[] = [];
  for (let sha = headSha; sha !== baseSha; ) {
    const c = bySha.get(sha);
    if (!c) throw new Error(`merge group ${headSha.slice(0, 7)}: commit ${sha.slice(0, 7)} is not among the ${data.commits.length} commits between the base ${baseSha.slice(0, 7)} and the head`);
    chain.unshift({ sha: c.sha, tree: c.commit.tree.sha });
    sha = c.parents[0]?.sha ?? baseSha;
  }
  return chain;
}

/** The tree a commit holds. */
export async function commitTree(gh: GitHubClient, repo: RepoRef, sha: string): Promise<string> {
  const { data } = await gh.rest.git.getCommit({ ...repo, commit_sha: sha });
  return data.tree.sha;
}
