import { CATEGORIES, type Category } from "../probe-check.js";
import type { Verdict } from "../result.js";
import { MedianSketch } from "../median-sketch.js";
import { rateOf } from "../wilson.js";
import { DIMENSIONS, type AgentScore, type Dimension, type Figures, type ScorecardFact, type Slice } from "./scorecard.js";

/** Index of a verdict in Tally.v and ScorecardCell.verdicts. */
export const VERDICT_INDEX: Record<Verdict, number> = { resolved: 0, "probe-rejected": 1, "official-failed": 2, error: 3 };

/**
 * Many attempts that share every key a scorecard slices by (agent, repository, task, area, week)
 * and the same first/best flags, summed: what the store's `scorecard_cells` keeps, so a scorecard
 * of a million attempts folds a few thousand of these instead. Durations are not here (medians do
 * not add up): the builder's caller supplies each slice's durations (see `Tally.timedPending`).
 */
export interface ScorecardCell {
  agent: string | null;
  owner: string | null;
  repo: string | null;
  task: string;
  area: string | null;
  /** Week index: whole weeks since 1970-01-05 (a Monday), of when the attempts finished. */
  week: number;
  first: boolean;
  best: boolean;
  /** Attempts in the cell. */
  n: number;
  /** Counts per verdict, in VERDICT_INDEX order. */
  verdicts: readonly number[];
  /** Counts per category (CATEGORIES order) of attempts with a failed probe check of it. */
  categories: readonly number[];
  /** Attempts whose duration a MedianSketch would take (finite, non-negative). */
  timed: number;
  /** Sum of the recorded GPU seconds. */
  gpuSeconds: number;
}

/** Running tallies of one slice. */
export class Tally {
  n = 0;
  v = [0, 0, 0, 0];
  cats = new Array<number>(CATEGORIES.length).fill(0);
  firstJudged = 0;
  firstResolved = 0;
  bestJudged = 0;
  bestResolved = 0;
  durations = new MedianSketch();
  gpuSeconds = 0;
  /** Durations counted from cells, not yet given to `durations` (the store supplies them). */
  timedPending = 0;

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

  /** `count` for every attempt of a cell at once. */
  countCell(c: ScorecardCell): void {
    this.n += c.n;
    for (let i = 0; i < 4; i++) this.v[i]! += c.verdicts[i] as number;
    for (let i = 0; i < CATEGORIES.length; i++) this.cats[i]! += c.categories[i] as number;
    this.timedPending += c.timed;
    this.gpuSeconds += c.gpuSeconds;
  }

  /** `attempts` for every attempt of a cell at once. */
  attemptsCell(c: ScorecardCell): void {
    const judged = c.n - (c.verdicts[VERDICT_INDEX.error] as number);
    const resolved = c.verdicts[VERDICT_INDEX.resolved] as number;
    if (c.first) {
      this.firstJudged += judged;
      this.firstResolved += resolved;
    }
    if (c.best) {
      this.bestJudged += judged;
      this.bestResolved += resolved;
    }
  }

  figures(): Figures {
    if (this.timedPending > 0 && this.timedPending !== this.durations.count) {
      throw new Error(`scorecard slice: ${this.timedPending} timed attempts counted but ${this.durations.count} durations supplied`);
    }
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
export class AgentTally {
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
      DIMENSIONS.map((d) => [d, [...this.by[d]].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, t]): Slice => ({ key, figures: t.figures() }))]),
    ) as Record<Dimension, Slice[]>;
    return { agent, rank: null, tiedWith: [], figures: this.all.figures(), by };
  }
}
