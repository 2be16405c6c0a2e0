import type { Verdict } from "./result.js";

/**
 * The rule of `/probegate accept`: a person with write permission accepts a measured difference the
 * change means to make (a feature that adds a collective) for one head, and an evaluation every
 * failed check of which is accepted passes the gate as accepted, while its signed result keeps its
 * verdict. A new push needs a new acceptance (the store keys them by evaluation attempt and head).
 */

/** A failed check of an evaluation's attempt, as the store keeps it. */
export interface CheckFailure {
  probeId: string;
  status: "failed" | "error";
}

/**
 * The failures acceptances do not cover: a failed check is covered once accepted; a check that
 * errored never is, since it measured nothing to accept. Pure.
 */
export function unaccepted<F extends CheckFailure>(failures: readonly F[], acceptedIds: Iterable<string>): F[] {
  const ids = new Set(acceptedIds);
  return failures.filter((f) => !(f.status === "failed" && ids.has(f.probeId)));
}

/**
 * Whether an attempt passes the gate as accepted: it was probe-rejected (failing official tests and
 * errors are never accepted away), it has failures, and acceptances cover each of them. Pure.
 */
export function passesAsAccepted(verdict: Verdict, failures: readonly CheckFailure[], acceptedIds: Iterable<string>): boolean {
  return verdict === "probe-rejected" && failures.length > 0 && unaccepted(failures, acceptedIds).length === 0;
}
