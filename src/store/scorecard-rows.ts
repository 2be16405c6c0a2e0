import { summarizeAttempts, type AttemptResult } from "../core/attempt-summary.js";
import type { Category } from "../core/probe-check.js";
import type { Verdict } from "../core/result.js";
import type { CountedAttempt, ScorecardBasis, ScorecardFilter } from "../core/scorecard.js";
import type { StoreDb } from "./db.js";

/**
 * Which attempts count: `first-attempt` (one per repo × PR × task: what the agent delivered
 * unaided), `best-of-n` (one per repo × PR × task: the best any rerun or push reached), or `all`
 * (every finished attempt).
 */
export type { ScorecardBasis, ScorecardFilter };

/** One cell of a scorecard: how many counted attempts of `agent` at `task` got `verdict`. */
export interface ScorecardRow {
  /** The normalised agent name; null for PRs no agent was detected on. */
  agent: string | null;
  task: string;
  verdict: Verdict;
  count: number;
}

/**
 * The attempts a scorecard counts, with the probe categories each failed. `owner`/`repo` narrow it
 * to one repository. `since` keeps (repo, PR, task) groups whose first attempt finished at or after
 * it (with `all`: attempts finished at or after it), so a "first attempt" is never one that merely
 * came first inside the window. A group's agent is that of its first finished attempt.
 */
export function countedAttempts(db: StoreDb, opts: ScorecardFilter): CountedAttempt[] {
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
  const failed = db.prepare("SELECT DISTINCT category FROM probe_failures WHERE evaluation_key = ? AND attempt = ? AND status = 'failed' ORDER BY category");

  // Group attempts by (repo, PR, task); an evaluation without a PR is its own group.
  const groups = new Map<string, { agent: string | null; task: string; results: AttemptResult[] }>();
  for (const r of rows) {
    const id = r.pr === null ? `key:${r.evaluation_key}` : JSON.stringify([r.owner, r.repo, r.pr, r.task]);
    const g = groups.get(id) ?? { agent: r.agent, task: r.task, results: [] };
    g.results.push({ evaluationKey: r.evaluation_key, attempt: r.attempt, headSha: r.head_sha, verdict: r.verdict, finishedAt: new Date(r.finished_at) });
    groups.set(id, g);
  }

  const out: CountedAttempt[] = [];
  const add = (g: { agent: string | null; task: string }, r: AttemptResult) => {
    const categories = (failed.all(r.evaluationKey, r.attempt) as Array<{ category: Category }>).map((c) => c.category);
    out.push({ agent: g.agent, task: g.task, verdict: r.verdict, failedCategories: categories });
  };
  const since = opts.since?.getTime() ?? -Infinity;
  for (const g of groups.values()) {
    if (opts.basis === "all") {
      for (const r of g.results) if (r.finishedAt.getTime() >= since) add(g, r);
      continue;
    }
    const summary = summarizeAttempts(g.results);
    if (summary && summary.first.finishedAt.getTime() >= since) add(g, opts.basis === "first-attempt" ? summary.first : summary.best);
  }
  return out;
}

/** Per agent × task × verdict counts of the counted attempts, sorted by agent, task, verdict. */
export function scorecardRows(db: StoreDb, opts: ScorecardFilter): ScorecardRow[] {
  const counts = new Map<string, ScorecardRow>();
  for (const a of countedAttempts(db, opts)) {
    const id = JSON.stringify([a.agent, a.task, a.verdict]);
    const row = counts.get(id) ?? { agent: a.agent, task: a.task, verdict: a.verdict, count: 0 };
    row.count += 1;
    counts.set(id, row);
  }
  return [...counts.values()].sort(
    (a, b) => (a.agent ?? "").localeCompare(b.agent ?? "") || a.task.localeCompare(b.task) || a.verdict.localeCompare(b.verdict),
  );
}
