import { decideVerdict, type VerdictOutcome } from "./verdict.js";
import type { EvaluationResult } from "./result.js";

/**
 * A person's acceptance of one measured difference for one head: a change meant to cost more
 * (a feature that adds a collective) passes that check as accepted. Given with
 * `/probegate accept <check-id> <reason>` by someone with write permission, never the agent; a
 * new push needs a new acceptance, so it is keyed by the head SHA.
 */
export interface Acceptance {
  task: string;
  checkId: string;
  headSha: string;
  /** GitHub login of who accepted it. */
  by: string;
  reason: string;
  /** ISO time it was given. */
  at: string;
}

/** The verdict of a result once the acceptances for its head are applied, and which checks they turned. */
export interface AcceptedOutcome extends VerdictOutcome {
  accepted: Acceptance[];
  /** Acceptances for this task and head that name no failed check of the result (said, not applied). */
  unmatched: Acceptance[];
}

/**
 * Applies the acceptances of `task` at the result's head: each failed check they name counts as
 * passed, and the verdict is decided again. Acceptances of another head or task are ignored; the
 * signed result itself is never changed (the check run and the store say who accepted what). Pure.
 */
export function applyAcceptances(result: Pick<EvaluationResult, "official" | "probes" | "verdict" | "reason" | "submission">, task: string, acceptances: readonly Acceptance[]): AcceptedOutcome {
  const head = result.submission.sha ?? null;
  const mine = acceptances.filter((a) => a.task === task && head !== null && a.headSha === head);
  const failed = new Set(result.probes.filter((p) => p.status === "failed").map((p) => p.id));
  const accepted = mine.filter((a) => failed.has(a.checkId));
  const unmatched = mine.filter((a) => !failed.has(a.checkId));
  if (accepted.length === 0 || result.verdict === "error" || result.verdict === "official-failed") {
    return { verdict: result.verdict, reason: result.reason, accepted: [], unmatched };
  }
  const ids = new Set(accepted.map((a) => a.checkId));
  const probes = result.probes.map((p) => (ids.has(p.id) ? { status: "passed" as const } : { status: p.status }));
  const again = decideVerdict({ official: result.official, probes });
  const who = [...new Set(accepted.map((a) => `@${a.by}`))].join(", ");
  return { ...again, reason: `${again.reason}; ${accepted.length} measured difference${accepted.length === 1 ? "" : "s"} accepted by ${who}`, accepted, unmatched };
}
