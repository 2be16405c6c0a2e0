import { CATEGORIES, type Category } from "./probe-check.js";
import type { Verdict } from "./result.js";
import { MedianSketch } from "./median-sketch.js";
import { rateOf, type Rate } from "./wilson.js";
import { rankByInterval } from "./scorecard-ranking.js";

/** The verdicts in the order a scorecard shows them: best first. */
export const VERDICT_ORDER: readonly Verdict[] = ["resolved", "probe-rejected", "official-failed", "error"];

/** Which attempts a scorecard counts: each (repo, PR, task) group's first, its best, or every attempt. */
export type ScorecardBasis = "first-attempt" | "best-of-n" | "all";

/** Which attempts of which repositories a scorecard counts. */
export interface ScorecardFilter {
  basis: ScorecardBasis;
  owner?: string;
  repo?: string;
  /** Only (repo, PR, task) groups whose first attempt finished at or after this. */
  since?: Date;
}

const BASES: readonly ScorecardBasis[] = ["first-attempt", "best-of-n", "all"];

/**
 * A scorecard filter from text (CLI flags, a dashboard URL's query). On bad input, the field
 * (`basis`, `repo`, `since`) and what was wrong with its value. Pure.
 */
export function parseScorecardFilter(input: { basis?: string | null; repo?: string | null; since?: string | null }):
  | { ok: true; filter: ScorecardFilter }
  | { ok: false; field: "basis" | "repo" | "since"; message: string } {
  const basis = input.basis ?? "first-attempt";
  if (!BASES.includes(basis as ScorecardBasis)) return { ok: false, field: "basis", message: `'${basis}': expected ${BASES.slice(0, -1).join(", ")} or ${BASES.at(-1)}` };
  const filter: ScorecardFilter = { basis: basis as ScorecardBasis };
  if (input.repo) {
    const m = /^([A-Za-z0-9_.-]+)(?:\/([A-Za-z0-9_.-]+))?$/.exec(input.repo);
    if (!m) return { ok: false, field: "repo", message: `'${input.repo}': expected OWNER or OWNER/NAME` };
    filter.owner = m[1];
    if (m[2]) filter.repo = m[2];
  }
  if (input.since) {
    const d = /^\d{4}-\d{2}-\d{2}(T[\d:.]+Z?)?$/.test(input.since) ? new Date(input.since) : new Date(NaN);
    if (Number.isNaN(d.getTime())) return { ok: false, field: "since", message: `'${input.since}': expected a date like 2026-11-01 or 2026-11-01T12:00:00Z` };
    filter.since = d;
  }
  return { ok: true, filter };
}

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

const VERDICT_INDEX: Record<Verdict, number> = { resolved: 0, "probe-rejected": 1, "official-failed": 2, error: 3 };

/** Running tallies of one slice. */
class Tally {
  n = 0;
  v = [0, 0, 0, 0];
  cats = new Array<number>(CATEGORIES.length).fill(0);
  firstJudged = 0;
  firstResolved = 0;
  bestJudged = 0;
  bestResolved = 0;
  durations = new MedianSketch();
  gpuSeconds = 0;

  count(f: ScorecardFact): void {
    this.n += 1;
    this.v[VERDICT_INDEX[f.verdict]]! += 1;
    if (f.failedMask) for (let i = 0; i < CATEGORIES.length; i++) if (f.failedMask & (1 << i)) this.cats[i]! += 1;
    if (f.durationS !== null) this.durations.add(f.durationS);
    if (f.gpuSeconds !== null) this.gpuSeconds += f.gpuSeconds;
  }

  attempts(f: ScorecardFact): void {
    if (f.verdict === "error") return;
    const resolved = f.verdict === "resolved" ? 1 : 0;
    if (f.first) {
      this.firstJudged += 1;
      this.firstResolved += resolved;
    }
    if (f.best) {
      this.bestJudged += 1;
      this.bestResolved += resolved;
    }
  }

  figures(): Figures {
    const [resolved, rejected, officialFailed, error] = this.v as [number, number, number, number];
    const judged = this.n - error;
    return {
      evaluations: this.n,
      verdicts: { resolved, "probe-rejected": rejected, "official-failed": officialFailed, error },
      resolved: rateOf(resolved, judged),
      officialPass: rateOf(resolved + rejected, judged),
      probeRejection: rateOf(rejected, resolved + rejected),
      failedCategories: Object.fromEntries(CATEGORIES.map((c, i) => [c, this.cats[i]])) as Record<Category, number>,
      firstAttempt: rateOf(this.firstResolved, this.firstJudged),
      bestOfN: rateOf(this.bestResolved, this.bestJudged),
      medianDurationS: this.durations.median(),
      medianExact: this.durations.exact,
      timed: this.durations.count,
      gpuMinutes: this.gpuSeconds / 60,
    };
  }
}

/** The tallies of one agent: overall and per dimension. */
class AgentTally {
  all = new Tally();
  by: Record<Dimension, Map<string, Tally>> = { repository: new Map(), task: new Map(), area: new Map(), week: new Map() };

  /** Puts this agent's tallies for a fact with these dimension keys into `out` from `at` (no allocation per fact). */
  collect(keys: readonly string[], out: Tally[], at: number): void {
    out[at] = this.all;
    for (let i = 0; i < DIMENSIONS.length; i++) {
      const m = this.by[DIMENSIONS[i] as Dimension];
      const k = keys[i] as string;
      let t = m.get(k);
      if (!t) m.set(k, (t = new Tally()));
      out[at + 1 + i] = t;
    }
  }

  score(agent: string): AgentScore {
    const by = Object.fromEntries(
      DIMENSIONS.map((d) => [d, [...this.by[d]].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, t]) => ({ key, figures: t.figures() }))]),
    ) as Record<Dimension, Slice[]>;
    return { agent, rank: null, tiedWith: [], figures: this.all.figures(), by };
  }
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
    const wk = Math.floor((f.finishedAt - MONDAY0) / WEEK_MS);
    let week = this.weeks.get(wk);
    if (week === undefined) this.weeks.set(wk, (week = weekOf(f.finishedAt)));
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

/** Words for what a filter covers: "all repositories", "octo", "octo/gpu-lib". */
export function scopeOf(filter: ScorecardFilter): string {
  return filter.owner ? `${filter.owner}${filter.repo ? `/${filter.repo}` : ""}` : "all repositories";
}

const BASIS_WORDS: Record<ScorecardBasis, string> = {
  "first-attempt": "first attempt per PR and task (what the agent delivered unaided)",
  "best-of-n": "best attempt per PR and task (after reruns and pushes)",
  all: "every finished attempt",
};

/** What a scorecard counted, in words. */
export function describeBasis(basis: ScorecardBasis): string {
  return BASIS_WORDS[basis];
}

