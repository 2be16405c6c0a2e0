/** Values kept exactly before a sketch switches to buckets. */
export const EXACT_LIMIT = 2048;
/** Bucket width, relative: a bucketed median is within ±0.5% of the true one. */
export const STEP = Math.log(1.01);
/** Values under this share bucket 0. */
export const FLOOR = 1e-3;
/** How many buckets a sketch has (values over 1e7 share the last). */
export const BUCKETS = Math.ceil(Math.log(1e7 / FLOOR) / STEP) + 2;

/**
 * The median of a stream of non-negative figures (seconds, minutes) in bounded memory, because a
 * scorecard keeps one per agent × repository / task / area / week and sees a million evaluations.
 * Exact while it holds at most EXACT_LIMIT values; past that, log-spaced buckets 1% wide (values
 * under 1 ms share the first bucket), so the median is within ±0.5% and `exact` says so.
 */
export class MedianSketch {
  private exactValues: Float64Array | null = new Float64Array(16);
  private buckets: Uint32Array | null = null;
  private size = 0;

  get count(): number {
    return this.size;
  }

  /** Whether `median()` is the exact median (no more than EXACT_LIMIT values seen). */
  get exact(): boolean {
    return this.buckets === null;
  }

  add(x: number): void {
    if (!(x >= 0) || !Number.isFinite(x)) return;
    if (this.exactValues) {
      if (this.size === EXACT_LIMIT) this.toBuckets();
      else {
        if (this.size === this.exactValues.length) {
          const grown = new Float64Array(Math.min(EXACT_LIMIT, this.size * 2));
          grown.set(this.exactValues);
          this.exactValues = grown;
        }
        this.exactValues[this.size++] = x;
        return;
      }
    }
    (this.buckets as Uint32Array)[bucketOf(x)]! += 1;
    this.size += 1;
  }

  /**
   * Adds `n` values known only by their bucket (bucketOf): how the store hands over a slice's
   * durations from its pre-counted histogram. The sketch is bucketed from then on, so callers use
   * it only for more than EXACT_LIMIT values, where `add` would have bucketed them too.
   */
  addToBucket(bucket: number, n: number): void {
    if (!Number.isInteger(bucket) || bucket < 0 || bucket >= BUCKETS) throw new RangeError(`MedianSketch bucket ${bucket}: expected 0..${BUCKETS - 1}`);
    if (this.exactValues) this.toBuckets();
    (this.buckets as Uint32Array)[bucket]! += n;
    this.size += n;
  }

  private toBuckets(): void {
    const b = new Uint32Array(BUCKETS);
    for (const v of (this.exactValues as Float64Array).subarray(0, this.size)) b[bucketOf(v)]! += 1;
    this.buckets = b;
    this.exactValues = null;
  }

  /** The median (mean of the two middle values for an even count); null when nothing was added. */
  median(): number | null {
    if (this.size === 0) return null;
    if (this.exactValues) {
      const sorted = this.exactValues.slice(0, this.size).sort();
      const mid = this.size >> 1;
      return this.size % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
    }
    const b = this.buckets as Uint32Array;
    const half = this.size / 2;
    let seen = 0;
    for (let i = 0; i < b.length; i++) {
      seen += b[i] as number;
      if (seen >= half) return i === 0 ? FLOOR / 2 : FLOOR * Math.exp((i - 0.5) * STEP);
    }
    return null;
  }
}

/** The bucket of a (finite, non-negative) value; the store's histogram computes the same in SQL. */
export function bucketOf(x: number): number {
  if (x < FLOOR) return 0;
  return Math.min(BUCKETS - 1, 1 + Math.floor(Math.log(x / FLOOR) / STEP));
}
