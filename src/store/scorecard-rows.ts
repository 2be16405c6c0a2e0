import { CATEGORIES, type Category } from "../core/probe-check.js";
import type { Verdict } from "../core/result.js";
import { NO_AGENT, ScorecardBuilder, type Scorecard, type ScorecardFact, type ScorecardFilter } from "../core/scorecard/scorecard.js";
import { DRILLDOWN_LIMIT, type EvaluationLine } from "../core/scorecard/scorecard-drilldown.js";
import type { StoreDb } from "./db.js";
import { scorecardFromCells } from "./scorecard-cells.js";

/** One cell of a scorecard: how many counted attempts of `agent` at `task` got `verdict`. */
export interface ScorecardRow {
  /** The normalised agent name; null for PRs no agent was detected on. */
  agent: string | null;
  task: string;
  verdict: Verdict;
  count: number;
}

/** `counted` bits of scorecard_rows (migration 5): bit 0 the group's first attempt, bit 1 its best. */
const FIRST = 1;
const BEST = 2;
/** verdict_rank (migration 5) back to the verdict. */
const BY_RANK: readonly Verdict[] = ["error", "official-failed", "probe-rejected", "resolved"];

/**
 * The WHERE clause and its parameters for a filter over scorecard_rows (columns prefixed by `p`).
 * `counted`: the attempts the basis counts; `first-or-best`: every group's first and best attempt
 * too (the builder sorts them out). With `first-attempt` / `best-of-n`, `since` keeps groups whose
 * first attempt finished at or after it; with `all`, attempts finished at or after it.
 */
function where(filter: ScorecardFilter, which: "counted" | "first-or-best", p = ""): { sql: string; params: Array<string | number> } {
  const clauses: string[] = [];
  const params: Array<string | number> = [];
  if (filter.owner) clauses.push(`${p}owner = ?`), params.push(filter.owner);
  if (filter.repo) clauses.push(`${p}repo = ?`), params.push(filter.repo);
  const all = filter.basis === "all";
  if (which === "counted" && !all) clauses.push(`(${p}counted & ${filter.basis === "first-attempt" ? FIRST : BEST}) <> 0`);
  if (which === "first-or-best" && !all) clauses.push(`(${p}counted & ${FIRST | BEST}) <> 0`);
  if (filter.since) {
    const since = filter.since.getTime();
    if (!all) clauses.push(`${p}group_first_at >= ?`), params.push(since);
    else if (which === "counted") clauses.push(`${p}finished_at >= ?`), params.push(since);
    else clauses.push(`(${p}finished_at >= ? OR ${p}group_first_at >= ?)`), params.push(since, since);
  }
  if (filter.probeSet) {
    // The app keys an evaluation by the evaluator commit; the result names the commits it ran and the folder's hash.
    const row = p || "scorecard_rows.";
    clauses.push(
      `EXISTS (SELECT 1 FROM attempt_results a JOIN evaluations ev ON ev.key = a.evaluation_key
         WHERE a.evaluation_key = ${row}evaluation_key AND a.attempt = ${row}attempt
           AND (ev.probe_set LIKE ? OR a.evaluator_commit LIKE ? OR a.probes_commit LIKE ? OR a.probe_set_hash LIKE ?))`,
    );
    const prefix = `${filter.probeSet}%`;
    params.push(prefix, prefix, prefix, `sha256:${prefix}`);
  }
  return { sql: clauses.length ? `WHERE ${clauses.join(" AND ")}` : "", params };
}

/**
 * The scorecard of the store's finished attempts. Unfiltered (every repository, no `since`): from
 * the pre-counted cells (scorecardFromCells), a few thousand rows at a million evaluations (or
 * the full scan where the cells would read more: a small store). With a
 * repository or `since` filter: the full scan (scorecardScan), since the cells are not kept per
 * group start and their duration histograms not per repository.
 */
export function scorecardOf(db: StoreDb, filter: ScorecardFilter): Scorecard {
  if (filter.owner || filter.since || filter.probeSet) return scorecardScan(db, filter);
  return scorecardFromCells(db, filter.basis, { unlessScanIsCheaper: true }) ?? scorecardScan(db, filter);
}

/**
 * The scorecard of the store's finished attempts by one pass over scorecard_rows, streamed into the
 * core's ScorecardBuilder (raw rows, one reused fact object), so memory stays bounded by the number
 * of slices whatever the number of evaluations. The rows read are those the basis counts plus every
 * group's first and best attempt (for first-attempt against best-of-N). What scorecardOf does with
 * a filter, and the reference its cells are checked against.
 */
export function scorecardScan(db: StoreDb, filter: ScorecardFilter): Scorecard {
  const builder = new ScorecardBuilder(filter.basis, filter.since);
  const w = where(filter, "first-or-best");
  // Fewer, packed columns: crossing into JS costs per row and per value, the packing in SQL does not.
  const rows = db
    .prepare(
      `SELECT agent, owner, repo, task, area, verdict_rank | (counted << 2) | (failed_mask << 4), finished_at, group_first_at, duration_s, gpu_seconds
       FROM scorecard_rows ${w.sql}`,
    )
    .raw(true);
  const fact: ScorecardFact = {
    agent: null, owner: null, repo: null, task: "", area: null, verdict: "error", finishedAt: 0, groupFirstAt: 0,
    first: false, best: false, failedMask: 0, durationS: null, gpuSeconds: null,
  };
  for (const r of rows.iterate(...w.params) as IterableIterator<unknown[]>) {
    const packed = r[5] as number;
    fact.agent = r[0] as string | null;
    fact.owner = r[1] as string;
    fact.repo = r[2] as string;
    fact.task = r[3] as string;
    fact.area = r[4] as string | null;
    fact.verdict = BY_RANK[packed & 3] as Verdict;
    fact.first = (packed & (FIRST << 2)) !== 0;
    fact.best = (packed & (BEST << 2)) !== 0;
    fact.failedMask = packed >> 4;
    fact.finishedAt = r[6] as number;
    fact.groupFirstAt = r[7] as number;
    fact.durationS = r[8] as number | null;
    fact.gpuSeconds = r[9] as number | null;
    builder.add(fact);
  }
  return builder.build();
}

/** Per agent × task × verdict counts of the counted attempts, by one SQL GROUP BY; sorted by agent, task, verdict. */
export function scorecardRows(db: StoreDb, filter: ScorecardFilter): ScorecardRow[] {
  const w = where(filter, "counted");
  return db
    .prepare(
      `SELECT agent, task, verdict, COUNT(*) AS count FROM scorecard_rows ${w.sql}
       GROUP BY agent, task, verdict ORDER BY COALESCE(agent, ''), task, verdict`,
    )
    .all(...w.params) as ScorecardRow[];
}

const categoriesOf = (mask: number): Category[] => CATEGORIES.filter((_, i) => mask & (1 << i));

/**
 * The latest `limit` counted attempts of each of `agents` (null: PRs without an agent), newest
 * first, with what a drill-down links to: the PR, the commit, the evaluator's run.
 */
export function recentEvaluations(db: StoreDb, filter: ScorecardFilter, agents: ReadonlyArray<string | null>, limit: number): Map<string | null, EvaluationLine[]> {
  const w = where(filter, "counted", "s.");
  const sql = `SELECT s.agent, s.owner, s.repo, s.pr, s.task, s.verdict, s.attempt, s.finished_at, s.counted, s.failed_mask, s.duration_s,
      s.evaluation_key, e.head_sha, e.run_url
    FROM scorecard_rows s JOIN evaluations e ON e.key = s.evaluation_key
    ${w.sql ? `${w.sql} AND` : "WHERE"} s.agent IS ?
    ORDER BY s.finished_at DESC, s.id DESC LIMIT ?`;
  const stmt = db.prepare(sql);
  const out = new Map<string | null, EvaluationLine[]>();
  for (const agent of agents) {
    const rows = stmt.all(...w.params, agent, limit) as Array<{
      agent: string | null; owner: string; repo: string; pr: number | null; task: string; verdict: Verdict; attempt: number;
      finished_at: number; counted: number; failed_mask: number; duration_s: number | null; evaluation_key: string; head_sha: string; run_url: string | null;
    }>;
    out.set(
      agent,
      rows.map((r) => ({
        agent: r.agent, owner: r.owner, repo: r.repo, pr: r.pr, task: r.task, verdict: r.verdict, attempt: r.attempt,
        finishedAt: new Date(r.finished_at).toISOString(), first: (r.counted & FIRST) !== 0, best: (r.counted & BEST) !== 0,
        failedCategories: categoriesOf(r.failed_mask), durationS: r.duration_s, headSha: r.head_sha, evaluationKey: r.evaluation_key, runUrl: r.run_url,
      })),
    );
  }
  return out;
}

/** A store's scorecard and each agent's newest counted evaluations: what a page shows. */
export function scorecardView(db: StoreDb, filter: ScorecardFilter, limit = DRILLDOWN_LIMIT): { card: Scorecard; drill: Map<string | null, EvaluationLine[]> } {
  const card = scorecardOf(db, filter);
  const agents = card.agents.map((a) => (a.agent === NO_AGENT ? null : a.agent));
  return { card, drill: recentEvaluations(db, filter, agents, limit) };
}
