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

/** Records the conclusion the gate was posted with and, for a passed one, the tree its head holds. */
export function recordGateOutcome(db: StoreDb, at: { owner: string; repo: string; headSha: string }, conclusion: string, treeSha: string | null): void {
  db.prepare("UPDATE gates SET conclusion = ?, tree_sha = ? WHERE owner = ? AND repo = ? AND head_sha = ?").run(conclusion, treeSha, at.owner, at.repo, at.headSha);
}

/** The passed gates of a repository whose head holds one of these trees. */
export function passedGatesWithTrees(db: StoreDb, repo: { owner: string; repo: string }, trees: ReadonlyArray<string>): Array<{ pr: number; headSha: string; tree: string }> {
  if (trees.length === 0) return [];
  const rows = db
    .prepare(`SELECT pr, head_sha, tree_sha FROM gates WHERE owner = ? AND repo = ? AND conclusion = 'success' AND tree_sha IN (${trees.map(() => "?").join(", ")})`)
    .all(repo.owner, repo.repo, ...trees) as Array<{ pr: number; head_sha: string; tree_sha: string }>;
  return rows.map((r) => ({ pr: r.pr, headSha: r.head_sha, tree: r.tree_sha }));
}

/** The evaluations of one PR head, every task, in task order. */
export function evaluationsAtHead(db: StoreDb, at: { owner: string; repo: string; pr: number; headSha: string }): EvaluationRecord[] {
  return evaluationsOfPr(db, at)
    .filter((e) => e.headSha === at.headSha)
    .sort((a, b) => a.task.localeCompare(b.task));
}
