import type { getOctokit } from "@actions/github";

/**
 * The Octokit surface probegate uses. Both the Action's `getOctokit` client and Probot's
 * `context.octokit` have it, so the same github/ functions serve both.
 */
export type GitHubClient = Pick<ReturnType<typeof getOctokit>, "rest" | "paginate" | "request">;

export interface RepoRef {
  owner: string;
  repo: string;
}
