import { ProbotOctokit } from "probot";

/** Retries after a rate limit before giving up on a request. */
export const RATE_LIMIT_RETRIES = 3;

/** Tuning of retries and throttling; production uses the defaults, tests shrink the delays. */
export interface OctokitTuning {
  /** Milliseconds per unit of retry delay (Octokit's `retryAfterBaseValue`; 1000 in production, so retry-after is in seconds). */
  retryAfterBaseValue?: number;
  retry?: boolean;
  throttle?: boolean;
}

type Throttled = { method: string; url: string; request: { retryCount: number } };

/**
 * Probot's Octokit with retry and throttling on and rate limits retried: Probot's own defaults do
 * not retry a secondary rate limit, and docs/security.md asks for retries that honour `retry-after`
 * (the throttling plugin waits that long before each retry). The options are applied last, so
 * Probot's per-installation defaults cannot switch them back.
 */
export function probegateOctokit(tuning: OctokitTuning = {}): typeof ProbotOctokit {
  const base = tuning.retryAfterBaseValue ?? 1000;
  const retryLimited = (kind: string) => (retryAfter: number, options: Throttled, octokit: { log: { warn: (m: string) => void } }) => {
    const again = options.request.retryCount < RATE_LIMIT_RETRIES;
    octokit.log.warn(`${kind} on ${options.method} ${options.url}: ${again ? `retrying after ${retryAfter} s` : "giving up"}`);
    return again;
  };
  return ProbotOctokit.defaults((options: Record<string, any>) => ({
    ...options,
    retry: { ...options.retry, enabled: tuning.retry ?? true, retryAfterBaseValue: base },
    throttle: {
      ...options.throttle,
      enabled: tuning.throttle ?? true,
      retryAfterBaseValue: base,
      onRateLimit: retryLimited("rate limit"),
      onSecondaryRateLimit: retryLimited("secondary rate limit"),
    },
  })) as typeof ProbotOctokit;
}
