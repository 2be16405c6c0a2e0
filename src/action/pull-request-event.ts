import { readFileSync } from "node:fs";
import { CONTEXT_SUFFIX, type ResultContext } from "../core/scorecard/scorecard-results.js";

export interface PullRequestTarget {
  owner: string;
  repo: string;
  headSha: string;
  /** `pull_request.base.sha`: what a repository gate compares the head with. */
  baseSha: string | null;
  number: number;
}

/**
 * The PR a standalone run evaluates, from the event payload. Only `pull_request` is accepted:
 * `pull_request_target` would run PR code with a privileged token.
 */
export function readPullRequestEvent(eventName: string | undefined, eventPath: string | undefined): PullRequestTarget {
  if (eventName !== "pull_request") {
    throw new Error(`standalone mode runs on 'pull_request' events only (this run is '${eventName ?? "unknown"}'); never use pull_request_target with untrusted code`);
  }
  if (!eventPath) throw new Error("GITHUB_EVENT_PATH is not set: standalone mode reads the pull request from the event payload");
  const payload = JSON.parse(readFileSync(eventPath, "utf8")) as {
    pull_request?: { number: number; head: { sha: string }; base?: { sha?: string } };
    repository?: { name: string; owner: { login: string } };
  };
  const pr = payload.pull_request;
  const repo = payload.repository;
  if (!pr?.head?.sha || !repo?.owner?.login) throw new Error(`${eventPath}: not a pull_request payload (no pull_request.head.sha or repository.owner.login)`);
  return { owner: repo.owner.login, repo: repo.name, headSha: pr.head.sha, baseSha: pr.base?.sha ?? null, number: pr.number };
}

/**
 * The sidecar a standalone run writes beside its result (`NAME.context.json`), so a scorecard
 * built from result files knows the PR and its author: `probegate scorecard --results` detects the
 * agent from `author` / `headRef` / `labels` as the app would (src/core/scorecard/scorecard-results.ts).
 */
export function pullRequestContext(pr: PullRequestTarget, eventPath: string, runUrl: string | null): ResultContext {
  const payload = JSON.parse(readFileSync(eventPath, "utf8")) as {
    pull_request?: { user?: { login?: string; type?: string }; head?: { ref?: string }; labels?: Array<{ name?: string }> };
  };
  const p = payload.pull_request ?? {};
  return {
    repo: `${pr.owner}/${pr.repo}`,
    pr: pr.number,
    headSha: pr.headSha,
    ...(p.user?.login ? { author: p.user.login } : {}),
    ...(p.user?.type ? { authorType: p.user.type } : {}),
    ...(p.head?.ref ? { headRef: p.head.ref } : {}),
    labels: (p.labels ?? []).flatMap((l) => (l.name ? [l.name] : [])),
    ...(runUrl ? { runUrl } : {}),
  };
}

/** Where the sidecar of a result file goes: `probegate-result.json` → `probegate-result.context.json`. */
export function contextPath(resultPath: string): string {
  return `${resultPath.replace(/\.json$/, "")}${CONTEXT_SUFFIX}`;
}
