import { summarizeAttempts, type AttemptResult } from "../core/attempt-summary.js";
import type { Verdict } from "../core/result.js";
import type { StoreDb } from "./db.js";

/**
 * Which attempts count: `first-attempt` (one per repo × PR × task: what the agent delivered
 * unaided), `best-of-n` (one per repo × PR × task: the best any rerun or push reached), or `all`
 * (every finished attempt).
 */
export type ScorecardBasis = "first-attempt" | "best-of-n" | "all";

/** One cell of a scorecard: how many counted attempts of `agent` at `task` got `verdict`. */
export interface ScorecardRow {
  /** The normalised agent name; null for PRs no agent was detected on. */
  agent: string | null;
  task: string;
  verdict: Verdict;
  count: number;
}

/**
 * Per agent × task × verdict counts, sorted by agent, task, verdict. `owner`/`repo` narrow it to
 * one repository. `since` keeps (repo, PR, task) groups whose first attempt finished at or after it
 * (with `all`: attempts finished at or after it), so a "first attempt" is never one that merely
 * came first inside the window. A group's agent is that of its first finished attempt.
 */
export function scorecardRows(
  db: StoreDb,
  opts: { basis: ScorecardBasis; owner?: string; repo?: string; since?: Date },
): ScorecardRow[] {
  const rows = db
    .prepare(
      `SELECT r.evaluation_key, r.attempt, r.verdict, r.finished_at, e.head_sha, e.owner, e.repo, e.pr, e.task, e.agent
       FROM attempt_results r JOIN evaluations e ON e.key = r.evaluation_key
       WHERE (? IS NULL OR e.owner = ?) AND (? IS NULL OR e.repo = ?)
       ORDER BY r.finished_at, r.attempt`,
    )
    .all(opts.owner ?? null, opts.owner ?? null, opts.repo ?? null, opts.repo ?? null) as Array<{
    evaluation_key: string;
    attempt: number;
    verdict: Verdict;
    finished_at: number;
    head_sha: string;
    owner: string;
    repo: string;
    pr: number | null;
    task: string;
    agent: string | null;
  }>;

  // Group attempts by (repo, PR, task); an evaluation without a PR is its own group.
  const groups = new Map<string, { agent: string | null; task: string; results: AttemptResult[] }>();
  for (const r of rows) {
    const id = r.pr === null ? `key:${r.evaluation_key}` : JSON.stringify([r.owner, r.repo, r.pr, r.task]);
    const g = groups.get(id) ?? { agent: r.agent, task: r.task, results: [] };
    g.results.push({ evaluationKey: r.evaluation_key, attempt: r.attempt, headSha: r.head_sha, verdict: r.verdict, finishedAt: new Date(r.finished_at) });
    groups.set(id, g);
  }

  const counts = new Map<string, ScorecardRow>();
  const add = (agent: string | null, task: string, verdict: Verdict) => {
    const id = JSON.stringify([agent, task, verdict]);
    const row = counts.get(id) ?? { agent, task, verdict, count: 0 };
    row.count += 1;
    counts.set(id, row);
  };
  const since = opts.since?.getTime() ?? -Infinity;
  for (const g of groups.values()) {
    if (opts.basis === "all") {
      for (const r of g.results) if (r.finishedAt.getTime() >= since) add(g.agent, g.task, r.verdict);
      continue;
    }
    const summary = summarizeAttempts(g.results);
    if (summary && summary.first.finishedAt.getTime() >= since) add(g.agent, g.task, (opts.basis === "first-attempt" ? summary.first : summary.best).verdict);
  }
  return [...counts.values()].sort(
    (a, b) => (a.agent ?? "").localeCompare(b.agent ?? "") || a.task.localeCompare(b.task) || a.verdict.localeCompare(b.verdict),
  );
}
