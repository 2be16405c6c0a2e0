import type { CheckStatus } from "./probe-check.js";
import type { Verdict } from "./result.js";

export interface VerdictInput {
  /** Set when the harness (not the submission) failed before a judgement could be made. */
  harnessError?: string | null;
  official: { passed: boolean } | null;
  probes: ReadonlyArray<{ status: CheckStatus }>;
}

export interface VerdictOutcome {
  verdict: Verdict;
  reason: string;
}

/**
 * The verdict table. Order matters: a harness fault outranks everything (the submission was not
 * judged); failing official tests outrank probes (the probes are not needed to reject); one failed
 * probe rejects; a probe error without any failure leaves the submission unjudged; only a run with
 * at least one passed check and nothing else wrong resolves.
 */
export function decideVerdict(input: VerdictInput): VerdictOutcome {
  if (input.harnessError) return { verdict: "error", reason: input.harnessError };
  if (!input.official) return { verdict: "error", reason: "the official tests did not run" };
  if (!input.official.passed) return { verdict: "official-failed", reason: "the official tests failed" };
  const count = (s: CheckStatus) => input.probes.filter((p) => p.status === s).length;
  const failed = count("failed");
  const errors = count("error");
  const passed = count("passed");
  const total = input.probes.length;
  if (failed > 0) {
    return { verdict: "probe-rejected", reason: `passes the official tests, fails ${failed} of ${total} hidden probes` };
  }
  if (errors > 0) {
    return { verdict: "error", reason: `${errors} of ${total} hidden probes could not run to a result` };
  }
  if (passed === 0) return { verdict: "error", reason: "no hidden probe produced a result" };
  return { verdict: "resolved", reason: `passes the official tests and all ${passed} hidden probes` };
}
