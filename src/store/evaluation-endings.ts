import { timedOut } from "../core/evaluation-state.js";
import type { StoreDb } from "./db.js";
import {
  listPendingEvaluations,
  pendingOfPr,
  StaleEvaluationError,
  transitionEvaluation,
  type EvaluationRecord,
} from "./evaluations.js";

// Ending pending attempts in bulk: past their deadline, superseded by a newer head, or their PR closed.

/**
 * Marks every pending evaluation whose attempt began more than its deadline ago as timed out, and
 * returns them (the app then finishes their check runs). The deadline is `deadlineS` seconds, or
 * what `deadlineS(evaluation)` says for each. One that changed meanwhile is skipped: whoever
 * changed it decided its fate.
 */
export function markTimedOut(db: StoreDb, now: Date, deadlineS: number | ((e: EvaluationRecord) => number)): EvaluationRecord[] {
  const out: EvaluationRecord[] = [];
  for (const e of listPendingEvaluations(db)) {
    const limit = typeof deadlineS === "number" ? deadlineS : deadlineS(e);
    if (!timedOut(e, now, limit)) continue;
    try {
      out.push(
        transitionEvaluation(db, e.key, "time-out", {
          now,
          expectedVersion: e.version,
          patch: { error: `no result ${limit} s after the attempt began (state was '${e.state}')` },
        }),
      );
    } catch (err) {
      if (!(err instanceof StaleEvaluationError)) throw err;
    }
  }
  return out;
}

/**
 * Supersedes the pending evaluations of a PR that are for another head SHA (a newer push took
 * their place) and returns them, so the app can cancel their runs and say so on their check runs.
 */
export function supersedeOlderHeads(db: StoreDb, pr: { owner: string; repo: string; pr: number; headSha: string }, now: Date): EvaluationRecord[] {
  return endAll(db, pendingOfPr(db, pr, pr.headSha), "supersede", `superseded by ${pr.headSha.slice(0, 7)}`, now);
}

/**
 * Cancels every pending evaluation of a PR (it was closed) and returns them, so the app can cancel
 * their runs and say so on their check runs. Reopening the PR retries them.
 */
export function cancelPendingOfPr(db: StoreDb, pr: { owner: string; repo: string; pr: number }, why: string, now: Date): EvaluationRecord[] {
  return endAll(db, pendingOfPr(db, pr), "cancel", why, now);
}

/** Ends each attempt with `event`; one that changed meanwhile is skipped (whoever changed it decided). */
function endAll(db: StoreDb, pending: EvaluationRecord[], event: "supersede" | "cancel", error: string, now: Date): EvaluationRecord[] {
  const out: EvaluationRecord[] = [];
  for (const e of pending) {
    try {
      out.push(transitionEvaluation(db, e.key, event, { now, expectedVersion: e.version, patch: { error } }));
    } catch (err) {
      if (!(err instanceof StaleEvaluationError)) throw err;
    }
  }
  return out;
}
