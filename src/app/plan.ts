import { detectAgent, type DetectedAgent } from "../core/agent-detect.js";
import type { ConfigIssue } from "../core/app-check-outputs.js";
import { pathMatcher, routeTasks, type AppConfig, type RoutedTarget } from "../core/app-config.js";
import type { GitHubClient, RepoRef } from "../github/client.js";
import type { Evaluator } from "../github/evaluator.js";
import { changedPaths, commitMessages } from "../github/pull-request-facts.js";
import { loadRepoConfig, type RepoConfig } from "../github/repo-config.js";
import type { AppDeps } from "./deps.js";

/** What the app knows of a PR from its payload (or from `pulls.get`). */
export interface PullRequestFacts {
  number: number;
  headSha: string;
  /** The base commit the PR is compared with (`base.sha`); a merge group's is its `base_sha`. */
  baseSha: string;
  headRef: string;
  author: { login: string; type?: string | null };
  labels: string[];
  body: string | null;
  defaultBranch: string;
}

/** The PR facts of a `pull_request` object as webhooks and `pulls.get` show it. */
export function pullRequestFacts(pr: {
  number: number;
  head: { sha: string; ref: string };
  user: { login: string; type?: string } | null;
  labels?: Array<{ name?: string }>;
  body?: string | null;
  base: { sha: string; repo: { default_branch: string } };
}): PullRequestFacts {
  return {
    number: pr.number,
    headSha: pr.head.sha,
    baseSha: pr.base.sha,
    headRef: pr.head.ref,
    author: { login: pr.user?.login ?? "ghost", type: pr.user?.type ?? null },
    labels: (pr.labels ?? []).map((l) => l.name ?? "").filter(Boolean),
    body: pr.body ?? null,
    defaultBranch: pr.base.repo.default_branch,
  };
}

/** What to do with a PR: nothing (and why), report a broken config, or evaluate these targets. */
export type Plan =
  | { kind: "skip"; why: string; config?: AppConfig }
  | { kind: "config-error"; ref: string; issues: ConfigIssue[] }
  | {
      kind: "evaluate";
      config: AppConfig;
      agent: DetectedAgent;
      targets: RoutedTarget[];
      evaluator: Evaluator;
      timeoutS: number;
      /** The `task:` targets a `paths:` route chose (changed files matched it): each should be a repository gate. */
      pathRouted: string[];
    };

/**
 * Decides whether and against what a PR is evaluated: reads the repository's config, detects the
 * agent (asking for the commits only when author, branch and labels say nothing), and routes the
 * PR (asking for the changed files only when a route looks at paths).
 */
export async function planEvaluations(gh: GitHubClient, deps: AppDeps, repo: RepoRef, pr: PullRequestFacts, preloaded?: RepoConfig): Promise<Plan> {
  const loaded = preloaded ?? (await loadRepoConfig(gh, { ...repo, defaultBranch: pr.defaultBranch }));
  if (loaded.kind === "invalid") return { kind: "config-error", ref: loaded.ref, issues: loaded.issues };
  if (loaded.kind === "missing") return { kind: "skip", why: `no .github/probegate.yml on ${loaded.ref}` };
  const config = loaded.config;
  if (!config.enabled) return { kind: "skip", why: "probegate is disabled in .github/probegate.yml" };

  const signals = { author: pr.author, headRef: pr.headRef, labels: pr.labels };
  const prRef = { ...repo, number: pr.number };
  const agent = detectAgent(signals, config.agents) ?? detectAgent({ ...signals, commitMessages: await commitMessages(gh, prRef) }, config.agents);
  if (!agent) return { kind: "skip", why: "not written by a known agent", config };

  const needsPaths = config.routes.some((r) => r.paths.length > 0);
  const changed = needsPaths ? await changedPaths(gh, prRef) : [];
  const routed = routeTasks({ labels: pr.labels, body: pr.body, changedPaths: changed }, config);
  if (routed.targets.length === 0) return { kind: "skip", why: "no route in .github/probegate.yml matches the PR", config };

  const evaluator = config.evaluator ?? deps.defaultEvaluator;
  if (!evaluator) {
    return {
      kind: "config-error",
      ref: pr.defaultBranch,
      issues: [{ field: "evaluator", line: null, message: "no evaluator is configured: add `evaluator: { repository, workflow }`, or start the app with PROBEGATE_EVALUATOR" }],
    };
  }
  const timeoutS = config.evaluator ? config.evaluator.timeoutMinutes * 60 : deps.defaultTimeoutS;
  const pathRouted = routed.targets
    .filter((t) => t.kind === "task" && config.routes.some((r) => r.task === t.id && r.paths.length > 0 && changed.some(pathMatcher(r.paths))))
    .map((t) => t.id);
  return { kind: "evaluate", config, agent, targets: routed.targets, evaluator: { repository: evaluator.repository, workflow: evaluator.workflow, ref: evaluator.ref }, timeoutS, pathRouted };
}
