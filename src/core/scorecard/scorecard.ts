import { CATEGORIES, type Category } from "../probe-check.js";
import type { Verdict } from "../result.js";
import type { Rate } from "../wilson.js";
import { rankByInterval } from "./scorecard-ranking.js";
import { AgentTally, type ScorecardCell, type Tally } from "./scorecard-tally.js";

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
  /**
   * Only attempts judged by this probe set: a prefix of the evaluator commit (the app's probe-set
   * version), of the probes repository's commit, or of the probe folder's hash.
   */
  probeSet?: string;
}

const BASES: readonly ScorecardBasis[] = ["first-attempt", "best-of-n", "all"];

/**
 * A scorecard filter from text (CLI flags, a dashboard URL's query). On bad input, the field
 * (`basis`, `repo`, `since`) and what was wrong with its value. Pure.
 */
export function parseScorecardFilter(input: { basis?: string | null; repo?: string | null; since?: string | null; probeSet?: string | null }):
  | { ok: true; filter: ScorecardFilter }
  | { ok: false; field: "basis" | "repo" | "since" | "probe-set"; message: string } {
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
  if (input.probeSet) {
    const v = input.probeSet.trim().replace(/^sha256:/, "");
    if (!/^[0-9a-f]{7,64}$/i.test(v)) return { ok: false, field: "probe-set", message: `'${input.probeSet}': expected a commit or probe-set hash (at least 7 hex digits)` };
    filter.probeSet = v.toLowerCase();
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

/** Whether a result was judged by the probe set a filter names (a prefix of either commit or of the folder's hash). */
export function judgedByProbeSet(result: { task: { probeSet: string }; probeSetVersion?: { evaluatorCommit: string | null; probesCommit: string | null } | null }, probeSet: string): boolean {
  const v = result.probeSetVersion;
  return [result.task.probeSet.replace(/^sha256:/, ""), v?.evaluatorCommit, v?.probesCommit].some((x) => typeof x === "string" && x.toLowerCase().startsWith(probeSet));
}

/** Words for what a filter covers: "all repositories", "octo", "octo/gpu-lib". */
export function scopeOf(filter: ScorecardFilter): string {
  const where = filter.owner ? `${filter.owner}${filter.repo ? `/${filter.repo}` : ""}` : "all repositories";
  return filter.probeSet ? `${where}, probe set ${filter.probeSet}` : where;
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

