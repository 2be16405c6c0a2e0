/** Below this many trials a rate is shown as its count ("2/3, too few to rate"), never as a percentage. */
export const MIN_RATED = 5;

/** z for a two-sided 95% interval. */
const Z95 = 1.959963984540054;

/**
 * A share with what it was computed from: `k` of `n`, the point estimate, and its 95% Wilson score
 * interval. `rate`, `low` and `high` are null when `n` is 0 (nothing to divide). `fewerThanMin`
 * marks `n < MIN_RATED`: such a rate is reported as a count, not as a percentage.
 */
export interface Rate {
  k: number;
  n: number;
  rate: number | null;
  low: number | null;
  high: number | null;
  fewerThanMin: boolean;
}

/**
 * The 95% Wilson score interval of `k` successes in `n` trials. Wilson rather than the normal
 * approximation because scorecards are full of small counts and rates at 0% or 100%, where the
 * normal interval collapses to a point or leaves [0, 1]; Wilson stays inside and stays honest
 * (0 of 10 is [0, 28%], not [0, 0]). The ends at k = 0 and k = n are exact 0 and 1.
 */
export function wilsonInterval(k: number, n: number, z = Z95): { low: number; high: number } {
  if (!(n > 0) || k < 0 || k > n) throw new RangeError(`wilsonInterval needs 0 <= k <= n and n > 0 (got k=${k}, n=${n})`);
  const p = k / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / (1 + z2 / n);
  return { low: k === 0 ? 0 : Math.max(0, centre - half), high: k === n ? 1 : Math.min(1, centre + half) };
}

/** `k` of `n` as a Rate (see `Rate`). */
export function rateOf(k: number, n: number): Rate {
  if (n === 0) return { k, n, rate: null, low: null, high: null, fewerThanMin: true };
  const { low, high } = wilsonInterval(k, n);
  return { k, n, rate: k / n, low, high, fewerThanMin: n < MIN_RATED };
}

/** Whether two rates' intervals share a point (then they must not be ranked apart). */
export function overlaps(a: Rate, b: Rate): boolean {
  if (a.low === null || a.high === null || b.low === null || b.high === null) return false;
  return a.low <= b.high && b.low <= a.high;
}

const pct = (x: number) => `${Math.round(x * 100)}%`;

/**
 * A rate for people: "62% (31/50, 95% CI 48–74%)"; under MIN_RATED trials "2/3 (too few to rate)";
 * "–" when there were none. `compact` drops the words ("62% [48–74] 31/50", "2/3 n<5").
 */
export function formatRate(r: Rate, opts: { compact?: boolean } = {}): string {
  if (r.n === 0 || r.rate === null || r.low === null || r.high === null) return "–";
  if (r.fewerThanMin) return opts.compact ? `${r.k}/${r.n} n<${MIN_RATED}` : `${r.k}/${r.n} (too few to rate)`;
  const lo = Math.round(r.low * 100);
  const hi = Math.round(r.high * 100);
  return opts.compact ? `${pct(r.rate)} [${lo}–${hi}] ${r.k}/${r.n}` : `${pct(r.rate)} (${r.k}/${r.n}, 95% CI ${lo}–${hi}%)`;
}
