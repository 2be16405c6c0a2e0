import { summarizeAttempts, type AttemptResult, type AttemptSummary } from "../core/attempt-summary.js";
import type { Verdict } from "../core/result.js";
import type { RerunRefusal } from "../core/rerun-policy.js";
import type { StoreDb } from "./db.js";

/** Where a rerun request came from: a `/probegate rerun` comment, the check run's button, or the app retrying a time-out. */
export type RerunSource = "comment" | "check-run" | "retry";

/** One rerun request, accepted or refused, as the app decided it. */
export interface RerunAttempt {
  owner: string;
  repo: string;
  pr: number;
  /** The task asked for; null for every task the PR maps to. */
  task: string | null;
  requestedBy: string;
  source: RerunSource;
  accepted: boolean;
  /** Why it was refused (null when accepted). */
  reason: RerunRefusal | string | null;
  /** The evaluations an accepted rerun started again. */
  evaluationKeys?: ReadonlyArray<string>;
}

/** Records a rerun request, whatever was decided, and returns its id. */
export function recordRerunAttempt(db: StoreDb, a: RerunAttempt, now: Date): number {
  if (a.accepted === (a.reason !== null)) {
    throw new TypeError(`A rerun attempt has a reason exactly when it was refused (accepted: ${a.accepted}, reason: ${JSON.stringify(a.reason)}).`);
  }
  const record = db.transaction(() => {
    const info = db
      .prepare("INSERT INTO rerun_attempts (owner, repo, pr, task, requested_by, source, accepted, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .run(a.owner, a.repo, a.pr, a.task, a.requestedBy, a.source, a.accepted ? 1 : 0, a.reason, now.getTime());
    const id = Number(info.lastInsertRowid);
    const link = db.prepare("INSERT INTO rerun_evaluations (rerun_id, evaluation_key) VALUES (?, ?) ON CONFLICT DO NOTHING");
    for (const key of a.evaluationKeys ?? []) link.run(id, key);
    return id;
  });
  return record();
}

/**
 * When this PR's accepted reruns happened within `windowMs` before `now`, oldest first: the input
 * of the rerun policy's rate limit. Refused requests do not count, so nobody can use up a PR's
 * reruns by being refused.
 */
export function recentRerunTimes(db: StoreDb, pr: { owner: string; repo: string; pr: number }, now: Date, windowMs: number): Date[] {
  const rows = db
    .prepare("SELECT at FROM rerun_attempts WHERE owner = ? AND repo = ? AND pr = ? AND accepted = 1 AND at > ? AND at <= ? ORDER BY at")
    .all(pr.owner, pr.repo, pr.pr, now.getTime() - windowMs, now.getTime()) as Array<{ at: number }>;
  return rows.map((r) => new Date(r.at));
}

/** Every rerun request of a PR (accepted or not), oldest first, for audit. */
export function rerunAttempts(db: StoreDb, pr: { owner: string; repo: string; pr: number }): Array<RerunAttempt & { id: number; at: Date }> {
  const rows = db
    .prepare("SELECT * FROM rerun_attempts WHERE owner = ? AND repo = ? AND pr = ? ORDER BY at, id")
    .all(pr.owner, pr.repo, pr.pr) as Array<{
    id: number;
    owner: string;
    repo: string;
    pr: number;
    task: string | null;
    requested_by: string;
    source: RerunSource;
    accepted: number;
    reason: string | null;
    at: number;
  }>;
  const keys = db.prepare("SELECT evaluation_key FROM rerun_evaluations WHERE rerun_id = ? ORDER BY evaluation_key");
  return rows.map((r) => ({
    id: r.id,
    owner: r.owner,
    repo: r.repo,
    pr: r.pr,
    task: r.task,
    requestedBy: r.requested_by,
    source: r.source,
    accepted: r.accepted === 1,
    reason: r.reason,
    at: new Date(r.at),
    evaluationKeys: (keys.all(r.id) as Array<{ evaluation_key: string }>).map((k) => k.evaluation_key),
  }));
}

/** The finished attempts at one (repo, PR, task), across every head SHA and rerun. */
export function attemptResults(db: StoreDb, at: { owner: string; repo: string; pr: number; task: string }): AttemptResult[] {
  const rows = db
    .prepare(
      `SELECT r.evaluation_key, r.attempt, r.verdict, r.finished_at, e.head_sha FROM attempt_results r
       JOIN evaluations e ON e.key = r.evaluation_key
       WHERE e.owner = ? AND e.repo = ? AND e.pr = ? AND e.task = ? ORDER BY r.finished_at, r.attempt`,
    )
    .all(at.owner, at.repo, at.pr, at.task) as Array<{ evaluation_key: string; attempt: number; verdict: Verdict; finished_at: number; head_sha: string }>;
  return rows.map((r) => ({ evaluationKey: r.evaluation_key, attempt: r.attempt, headSha: r.head_sha, verdict: r.verdict, finishedAt: new Date(r.finished_at) }));
}

/** First-attempt and best-of-N results of one (repo, PR, task); null before any attempt finished. */
export function attemptSummary(db: StoreDb, at: { owner: string; repo: string; pr: number; task: string }): AttemptSummary | null {
  return summarizeAttempts(attemptResults(db, at));
}
