import { passesAsAccepted } from "../core/acceptance.js";
import type { StoreDb } from "./db.js";
import { probeFailures } from "./dispatch-context.js";
import type { EvaluationRecord } from "./evaluations.js";

/** One acceptance as stored: which attempt's check, who, why, when. */
export interface StoredAcceptance {
  evaluationKey: string;
  attempt: number;
  headSha: string;
  checkId: string;
  by: string;
  reason: string;
  commentId: number | null;
  at: Date;
}

/** Records an acceptance; a second one of the same check of the same attempt replaces the first (the newest reason stands). */
export function recordAcceptance(db: StoreDb, a: StoredAcceptance): void {
  db.prepare(
    `INSERT INTO acceptances (evaluation_key, attempt, head_sha, check_id, accepted_by, reason, comment_id, accepted_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (evaluation_key, attempt, check_id) DO UPDATE SET accepted_by = excluded.accepted_by, reason = excluded.reason, comment_id = excluded.comment_id, accepted_at = excluded.accepted_at`,
  ).run(a.evaluationKey, a.attempt, a.headSha, a.checkId, a.by, a.reason, a.commentId, a.at.getTime());
}

/** The acceptances of one attempt of an evaluation, oldest first. */
export function acceptancesOf(db: StoreDb, key: string, attempt: number): StoredAcceptance[] {
  const rows = db
    .prepare("SELECT evaluation_key, attempt, head_sha, check_id, accepted_by, reason, comment_id, accepted_at FROM acceptances WHERE evaluation_key = ? AND attempt = ? ORDER BY id")
    .all(key, attempt) as Array<{ evaluation_key: string; attempt: number; head_sha: string; check_id: string; accepted_by: string; reason: string; comment_id: number | null; accepted_at: number }>;
  return rows.map((r) => ({ evaluationKey: r.evaluation_key, attempt: r.attempt, headSha: r.head_sha, checkId: r.check_id, by: r.accepted_by, reason: r.reason, commentId: r.comment_id, at: new Date(r.accepted_at) }));
}

/** Whether every failed check of an evaluation's attempt is accepted (and none errored): it then passes the gate as accepted. */
export function fullyAccepted(db: StoreDb, e: Pick<EvaluationRecord, "key" | "attempt" | "verdict">): boolean {
  if (e.verdict !== "probe-rejected") return false; // no query for an attempt that cannot pass as accepted
  return passesAsAccepted(e.verdict, probeFailures(db, e.key, e.attempt), acceptancesOf(db, e.key, e.attempt).map((a) => a.checkId));
}
