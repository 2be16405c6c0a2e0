import type { StoreDb } from "./db.js";
import { evaluationsOfPr } from "./dispatch-context.js";
import type { EvaluationRecord } from "./evaluations.js";

/** The gate check run of one PR head (`gate: true` repositories). */
export interface GateRecord {
  owner: string;
  repo: string;
  headSha: string;
  pr: number;
  checkRunId: number;
  /** Whether its final conclusion was posted (a later rerun opens a new one). */
  concluded: boolean;
}

/** Records the head's open gate check run (a new one replaces the last: a rerun opens a new gate). */
export function openGateRecord(db: StoreDb, g: { owner: string; repo: string; headSha: string; pr: number; checkRunId: number }): void {
  db.prepare(
    `INSERT INTO gates (owner, repo, head_sha, pr, check_run_id, concluded) VALUES (?, ?, ?, ?, ?, 0)
     ON CONFLICT (owner, repo, head_sha) DO UPDATE SET pr = excluded.pr, check_run_id = excluded.check_run_id, concluded = 0`,
  ).run(g.owner, g.repo, g.headSha, g.pr, g.checkRunId);
}

/** The head's gate, or null when its repository has no gate (or the head was never evaluated). */
export function getGate(db: StoreDb, at: { owner: string; repo: string; headSha: string }): GateRecord | null {
  const r = db.prepare("SELECT * FROM gates WHERE owner = ? AND repo = ? AND head_sha = ?").get(at.owner, at.repo, at.headSha) as
    | { owner: string; repo: string; head_sha: string; pr: number; check_run_id: number; concluded: number }
    | undefined;
  return r ? { owner: r.owner, repo: r.repo, headSha: r.head_sha, pr: r.pr, checkRunId: r.check_run_id, concluded: r.concluded === 1 } : null;
}

/**
 * Marks the gate concluded, once: true only for the caller that flipped it (a redelivered finish
 * or a racing process does not post the conclusion twice).
 */
export function concludeGate(db: StoreDb, at: { owner: string; repo: string; headSha: string; checkRunId: number }): boolean {
  return (
    db.prepare("UPDATE gates SET concluded = 1 WHERE owner = ? AND repo = ? AND head_sha = ? AND check_run_id = ? AND concluded = 0").run(at.owner, at.repo, at.headSha, at.checkRunId).changes === 1
  );
}

/** The evaluations of one PR head, every task, in task order. */
export function evaluationsAtHead(db: StoreDb, at: { owner: string; repo: string; pr: number; headSha: string }): EvaluationRecord[] {
  return evaluationsOfPr(db, at)
    .filter((e) => e.headSha === at.headSha)
    .sort((a, b) => a.task.localeCompare(b.task));
}
