import type { Verdict } from "./result.js";

export const FAIL_ON = ["probe-rejected", "official-failed", "any", "never", "probe-rejected-only", "official-failed-only"] as const;
export type FailOn = (typeof FAIL_ON)[number];

/**
 * Whether the step fails for this verdict. An `error` (the submission was not judged) fails the
 * step unless the user opts out: a gate that passes on a harness error passes whatever broke the
 * harness. `probe-rejected` (the default) fails on any rejection, official or hidden, and on an
 * error; `official-failed` on failing official tests (probes advise) and on an error; `any` on
 * anything but resolved; `never` reports without gating. The `-only` forms leave errors out:
 * `probe-rejected-only` fails on rejections alone, `official-failed-only` on official failures alone.
 */
export function stepFails(verdict: Verdict, failOn: FailOn): boolean {
  switch (failOn) {
    case "never":
      return false;
    case "any":
    case "probe-rejected":
      return verdict !== "resolved";
    case "official-failed":
      return verdict === "official-failed" || verdict === "error";
    case "probe-rejected-only":
      return verdict === "official-failed" || verdict === "probe-rejected";
    case "official-failed-only":
      return verdict === "official-failed";
  }
}
