import type { Category } from "../probe-check.js";
import type { Verdict } from "../result.js";

/** One counted attempt as an agent's drill-down lists it, with what to link to. */
export interface EvaluationLine {
  agent: string | null;
  owner: string | null;
  repo: string | null;
  pr: number | null;
  task: string;
  verdict: Verdict;
  attempt: number;
  /** ISO 8601, UTC. */
  finishedAt: string;
  first: boolean;
  best: boolean;
  failedCategories: Category[];
  durationS: number | null;
  headSha: string | null;
  evaluationKey: string | null;
  /** The evaluator's workflow run (app) or the job that produced the result file, where known. */
  runUrl: string | null;
  /** The results folder's file this came from (results input only). */
  file?: string;
}

/** How many evaluations each agent's drill-down lists (the newest). */
export const DRILLDOWN_LIMIT = 50;

/**
 * The PR's page on GitHub (or GitHub Enterprise at `serverUrl`), or null when the attempt has no
 * PR. Only http(s) server URLs are used, so a crafted one cannot become a `javascript:` link.
 */
export function prUrl(line: Pick<EvaluationLine, "owner" | "repo" | "pr">, serverUrl = "https://github.com"): string | null {
  if (line.pr === null || !line.owner || !line.repo || !/^https?:\/\/[^/\s]+/i.test(serverUrl)) return null;
  return `${serverUrl.replace(/\/+$/, "")}/${encodeURIComponent(line.owner)}/${encodeURIComponent(line.repo)}/pull/${line.pr}`;
}

/** Whether a run URL from a result or the store may be linked (http or https only). */
export function linkable(url: string | null): string | null {
  return url && /^https?:\/\//i.test(url) ? url : null;
}

/** The newest `limit` lines per agent, newest first (ties: the later in input order first). Pure. */
export function latestPerAgent(lines: readonly EvaluationLine[], limit = DRILLDOWN_LIMIT): Map<string | null, EvaluationLine[]> {
  const out = new Map<string | null, EvaluationLine[]>();
  lines
    .map((l, i) => [l, i] as const)
    .sort(([a, i], [b, j]) => (a.finishedAt < b.finishedAt ? 1 : a.finishedAt > b.finishedAt ? -1 : j - i))
    .forEach(([l]) => {
      const list = out.get(l.agent) ?? [];
      if (list.length < limit) list.push(l);
      out.set(l.agent, list);
    });
  return out;
}
