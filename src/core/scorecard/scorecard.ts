import { CATEGORIES, type Category } from "../probe-check.js";
import type { Verdict } from "../result.js";
import type { Rate } from "../wilson.js";
import { rankByInterval } from "./scorecard-ranking.js";
import { AgentTally, type ScorecardCell, type Tally } from "./scorecard-tally.js";
import type { ScorecardBasis } from "./scorecard-filter.js";

export * from "./scorecard-filter.js";

/** The verdicts in the order a scorecard shows them: best first. */
export const VERDICT_ORDER: readonly Verdict[] = ["resolved", "probe-rejected", "official-failed", "error"];

/**
 * One finished attempt as a scorecard sees it. The store and the results-folder reader both make
 * these; `first` / `best` say whether it is its (repo, PR, task) group's first attempt or its
 * best (see `summarizeAttempts`), and `groupFirstAt` when that group's first attempt finished.
 * Times are milliseconds since the epoch (UTC). Builders may reuse one object for every row.
 */
export interface ScorecardFact {
  /** The normalised agent name; null for PRs no agent was detected on. */
  agent: string | null;
  owner: string | null;
  repo: string | null;
  task: string;
  /** The task's area (training, inference, rl, other); null where the store did not record it. */
  area: string | null;
  verdict: Verdict;
  finishedAt: number;
  groupFirstAt: number;
  first: boolean;
  best: boolean;
  /** Bit i set: a probe check of category CATEGORIES[i] failed in this attempt (errors excluded). */
  failedMask: number;
  /** Wall-clock seconds of the whole evaluation; null where not recorded. */
  durationS: number | null;
  gpuSeconds: number | null;
}

export type VerdictCounts = Record<Verdict, number>;

/** Every figure of one slice (an agent, or an agent's repository, task, area or week). */
export interface Figures {
  /** Attempts counted (by the basis). */
  evaluations: number;
  verdicts: VerdictCounts;
  /** Resolved of the judged (errors judged nothing and are left out). */
  resolved: Rate;
  /** Passed every official test (resolved + probe-rejected), of the judged. */
  officialPass: Rate;
  /** Of the submissions that passed every official test, the share a hidden probe caught. */
  probeRejection: Rate;
  /** Per category: counted attempts with a failed probe check of that category. */
  failedCategories: Record<Category, number>;
  /** Resolved of the judged first attempts of the groups in this slice (whatever the basis). */
  firstAttempt: Rate;
  /** Resolved of the judged best attempts of the groups in this slice (whatever the basis). */
  bestOfN: Rate;
  /** Median wall-clock seconds of the counted attempts that recorded one. */
  medianDurationS: number | null;
  /** Whether the median is exact (false: within ±0.5%, see MedianSketch). */
  medianExact: boolean;
  /** Counted attempts that recorded a duration / GPU time. */
  timed: number;
  gpuMinutes: number;
}

/** The dimensions an agent's figures are broken down by. */
export const DIMENSIONS = ["repository", "task", "area", "week"] as const;
export type Dimension = (typeof DIMENSIONS)[number];

export interface Slice {
  key: string;
  figures: Figures;
}

/** How one agent (or everyone) did, overall and per repository, task, area and week. */
export interface AgentScore {
  agent: string;
  /** 1 for the best tier; agents whose resolved-rate intervals overlap share a tier. Null: not ranked (not an agent, or fewer than 5 judged). */
  rank: number | null;
  /** Other agents in the same tier: not ranked apart from this one. */
  tiedWith: string[];
  figures: Figures;
  by: Record<Dimension, Slice[]>;
}

export interface Scorecard {
  basis: ScorecardBasis;
  since: string | null;
  /** Ranked agents by tier, then unranked agents, then PRs without an agent. */
  agents: AgentScore[];
  /** Everyone together. */
  total: AgentScore;
  /** Every key seen per dimension, sorted (weeks: the Monday, YYYY-MM-DD, UTC). */
  keys: Record<Dimension, string[]>;
}

/** How a scorecard names the attempts no agent was detected on. */
export const NO_AGENT = "(no agent detected)";
export const UNKNOWN_REPOSITORY = "(unknown repository)";
export const UNKNOWN_AREA = "(area not recorded)";

const WEEK_MS = 7 * 86_400_000;
/** 1970-01-05, the first Monday of the epoch. */
const MONDAY0 = 4 * 86_400_000;

/** The Monday (UTC, YYYY-MM-DD) of the week a time falls in. */
export function weekOf(ms: number): string {
  const start = ms - ((((ms - MONDAY0) % WEEK_MS) + WEEK_MS) % WEEK_MS);
  return new Date(start).toISOString().slice(0, 10);
}

/**
 * Whether a basis counts this attempt: its group's first or best (group begun at or after `since`,
 * ms), or with `all` any attempt finished at or after `since`. Pure.
 */
export function isCounted(f: ScorecardFact, basis: ScorecardBasis, since = -Infinity): boolean {
  if (basis === "all") return f.finishedAt >= since;
  return f.groupFirstAt >= since && (basis === "first-attempt" ? f.first : f.best);
}

/**
 * Folds facts into a scorecard one at a time, in memory bounded by the number of slices (not of
 * facts), so the store can stream a million rows through it. `basis` picks which attempts the
 * figures count; first-attempt and best-of-N are tallied whatever the basis. `since` keeps groups
 * whose first attempt finished at or after it (with `all`: attempts finished at or after it), so a
 * "first attempt" is never one that merely came first inside the window. Pure.
 */
export class ScorecardBuilder {
  private readonly agents = new Map<string, AgentTally>();
  private readonly total = new AgentTally();
  private readonly weeks = new Map<number, string>();
  private readonly since: number;
  private readonly repositories = new Map<string, Map<string, string>>();
  private readonly keys: string[] = ["", "", "", ""];
  private readonly tallies: Tally[] = [];

  constructor(
    readonly basis: ScorecardBasis,
    since?: Date,
  ) {
    this.since = since?.getTime() ?? -Infinity;
  }

  add(f: ScorecardFact): void {
    const counted = isCounted(f, this.basis, this.since);
    const attempts = f.groupFirstAt >= this.since && (f.first || f.best);
    if (!counted && !attempts) return;
    const name = f.agent ?? NO_AGENT;
    let agent = this.agents.get(name);
    if (!agent) this.agents.set(name, (agent = new AgentTally()));
    const week = this.week(Math.floor((f.finishedAt - MONDAY0) / WEEK_MS));
    const keys = this.keys;
    keys[0] = this.repository(f.owner, f.repo);
    keys[1] = f.task;
    keys[2] = f.area ?? UNKNOWN_AREA;
    keys[3] = week;
    const tallies = this.tallies;
    agent.collect(keys, tallies, 0);
    this.total.collect(keys, tallies, 1 + DIMENSIONS.length);
    for (const t of tallies) {
      if (counted) t.count(f);
      if (attempts) t.attempts(f);
    }
  }

  /**
   * Adds a cell's attempts as `add` would add each of them, except their durations: each slice's
   * `timedPending` says how many the caller must still give its `durations` (see `forEachSlice`)
   * before `build`. Cells carry no group start, so a builder with `since` refuses them.
   */
  addCell(c: ScorecardCell): void {
    if (Number.isFinite(this.since)) throw new Error("ScorecardBuilder.addCell: cells cannot honour `since`; add facts instead");
    const counted = this.basis === "all" || (this.basis === "first-attempt" ? c.first : c.best);
    const attempts = c.first || c.best;
    if ((!counted && !attempts) || c.n === 0) return;
    const name = c.agent ?? NO_AGENT;
    let agent = this.agents.get(name);
    if (!agent) this.agents.set(name, (agent = new AgentTally()));
    const keys = this.keys;
    keys[0] = this.repository(c.owner, c.repo);
    keys[1] = c.task;
    keys[2] = c.area ?? UNKNOWN_AREA;
    keys[3] = this.week(c.week);
    const tallies = this.tallies;
    agent.collect(keys, tallies, 0);
    this.total.collect(keys, tallies, 1 + DIMENSIONS.length);
    for (const t of tallies) {
      if (counted) t.countCell(c);
      if (attempts) t.attemptsCell(c);
    }
  }

  /** The label of a week index (whole weeks since 1970-01-05). */
  week(wk: number): string {
    let week = this.weeks.get(wk);
    if (week === undefined) this.weeks.set(wk, (week = weekOf(MONDAY0 + wk * WEEK_MS)));
    return week;
  }

  /** Every slice so far: agent name (null: everyone), dimension (null: overall), key ("" overall), its tally. */
  forEachSlice(fn: (agent: string | null, dimension: Dimension | null, key: string, tally: Tally) => void): void {
    const visit = (name: string | null, a: AgentTally) => {
      fn(name, null, "", a.all);
      for (const d of DIMENSIONS) for (const [k, t] of a.by[d]) fn(name, d, k, t);
    };
    for (const [name, a] of this.agents) visit(name, a);
    visit(null, this.total);
  }

  /** The tally of one slice (see forEachSlice), if any attempt reached it. */
  slice(agent: string | null, dimension: Dimension | null, key: string): Tally | undefined {
    const a = agent === null ? this.total : this.agents.get(agent);
    if (!a) return undefined;
    return dimension === null ? a.all : a.by[dimension].get(key);
  }

  private repository(owner: string | null, repo: string | null): string {
    if (!owner || !repo) return UNKNOWN_REPOSITORY;
    let names = this.repositories.get(owner);
    if (!names) this.repositories.set(owner, (names = new Map()));
    let label = names.get(repo);
    if (label === undefined) names.set(repo, (label = `${owner}/${repo}`));
    return label;
  }

  build(): Scorecard {
    const scores = [...this.agents].map(([name, t]) => t.score(name));
    const total = this.total.score("all agents");
    const keys = Object.fromEntries(DIMENSIONS.map((d) => [d, total.by[d].map((s) => s.key)])) as Record<Dimension, string[]>;
    return { basis: this.basis, since: Number.isFinite(this.since) ? new Date(this.since).toISOString() : null, agents: rankByInterval(scores, NO_AGENT), total, keys };
  }
}

/** The scorecard of a list of facts (see ScorecardBuilder). Pure. */
export function buildScorecard(facts: Iterable<ScorecardFact>, basis: ScorecardBasis, since?: Date): Scorecard {
  const b = new ScorecardBuilder(basis, since);
  for (const f of facts) b.add(f);
  return b.build();
}

/** The bit mask of a list of failed categories (ScorecardFact.failedMask). */
export function categoryMask(categories: Iterable<Category>): number {
  let m = 0;
  for (const c of categories) {
    const i = CATEGORIES.indexOf(c);
    if (i >= 0) m |= 1 << i;
  }
  return m;
}
