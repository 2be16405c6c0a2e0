import type { Verdict } from "./result.js";

export const FAIL_ON = ["probe-rejected", "official-failed", "any", "never"] as const;
export type FailOn = (typeof FAIL_ON)[number];

/**
 * Whether the step fails for this verdict. `probe-rejected` (the default) fails on any rejection,
 * official or hidden; `official-failed` only when the official tests fail (probes advise);
 * `any` also on a harness error; `never` reports without gating.
 */
export function stepFails(verdict: Verdict, failOn: FailOn): boolean {
  switch (failOn) {
    case "never":
      return false;
    case "any":
      return verdict !== "resolved";
    case "official-failed":
      return verdict === "official-failed";
    case "probe-rejected":
      return verdict === "official-failed" || verdict === "probe-rejected";
  }
}
