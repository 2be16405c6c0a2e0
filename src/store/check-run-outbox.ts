import type { CheckRunOutput } from "../core/check-run-render.js";
import type { StoreDb } from "./db.js";

/** A final check-run output the store decided on and GitHub may not have received yet. */
export interface PendingCheckOutput {
  key: string;
  owner: string;
  repo: string;
  checkRunId: number;
  output: CheckRunOutput;
  extra: { detailsUrl?: string; actions?: Array<{ label: string; description: string; identifier: string }> };
  since: Date;
}

/**
 * Keeps an evaluation's final check-run output until it is posted. Written in the transaction that
 * ends the attempt, so a process killed between ending it in the store and telling GitHub leaves
 * the output here, and the sweep posts it (else the check run would stay queued forever: the
 * evaluation has ended, so no later event touches it).
 */
export function queueCheckOutput(db: StoreDb, p: Omit<PendingCheckOutput, "since">, now: Date): void {
  db.prepare(
    `INSERT INTO check_run_outbox (key, owner, repo, check_run_id, output, extra, since) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (key) DO UPDATE SET check_run_id = excluded.check_run_id, output = excluded.output, extra = excluded.extra, since = excluded.since`,
  ).run(p.key, p.owner, p.repo, p.checkRunId, JSON.stringify(p.output), JSON.stringify(p.extra), now.getTime());
}

/** The output was posted: forget it (only the one queued at `since`, not a newer one). */
export function checkOutputPosted(db: StoreDb, key: string, checkRunId: number): void {
  db.prepare("DELETE FROM check_run_outbox WHERE key = ? AND check_run_id = ?").run(key, checkRunId);
}

/** Outputs queued before `before` and still not posted: their poster died. */
export function unpostedCheckOutputs(db: StoreDb, before: Date): PendingCheckOutput[] {
  const rows = db.prepare("SELECT * FROM check_run_outbox WHERE since <= ? ORDER BY since").all(before.getTime()) as Array<{
    key: string; owner: string; repo: string; check_run_id: number; output: string; extra: string; since: number;
  }>;
  return rows.map((r) => ({ key: r.key, owner: r.owner, repo: r.repo, checkRunId: r.check_run_id, output: JSON.parse(r.output), extra: JSON.parse(r.extra), since: new Date(r.since) }));
}
