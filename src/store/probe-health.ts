import type { CheckStatus } from "../core/probe-check.js";
import { QUARANTINE_WINDOW, quarantinedChecks, type KnownGoodHistory, type QuarantinedCheck } from "../core/quarantine.js";
import type { StoreDb } from "./db.js";

/** Which probe set judged a known-good submission, what it was, and who says it is good. */
export interface KnownGoodRun {
  task: string;
  probeSet: string;
  /** The submission, e.g. `reference.patch` or `alt-loop.patch run 3/20`. */
  submission: string;
  /** Where the claim that it is good comes from, e.g. `validate --power`, `eval --known-good`. */
  source: string;
  at: Date;
}

/**
 * Records every check of one evaluation of a known-good submission, passed or not: the quarantine
 * rule needs the passes too, to count failures among the latest outcomes.
 */
export function recordKnownGoodOutcomes(db: StoreDb, run: KnownGoodRun, checks: ReadonlyArray<{ id: string; probe: string; status: CheckStatus }>): number {
  const insert = db.prepare(
    "INSERT INTO known_good_outcomes (task, probe_set, check_id, probe, status, submission, source, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
  );
  db.transaction(() => {
    for (const c of checks) insert.run(run.task, run.probeSet, c.id, c.probe, c.status, run.submission, run.source, run.at.getTime());
  })();
  return checks.length;
}

/** Each check's latest `window` outcomes on known-good submissions for one probe set, newest first. */
export function knownGoodHistories(db: StoreDb, at: { task: string; probeSet: string }, window = QUARANTINE_WINDOW): KnownGoodHistory[] {
  const rows = db
    .prepare(
      `SELECT check_id, status FROM (
         SELECT check_id, status, id, ROW_NUMBER() OVER (PARTITION BY check_id ORDER BY id DESC) AS n
         FROM known_good_outcomes WHERE task = ? AND probe_set = ?
       ) WHERE n <= ? ORDER BY check_id, id DESC`,
    )
    .all(at.task, at.probeSet, window) as Array<{ check_id: string; status: CheckStatus }>;
  const byCheck = new Map<string, CheckStatus[]>();
  for (const r of rows) byCheck.set(r.check_id, [...(byCheck.get(r.check_id) ?? []), r.status]);
  return [...byCheck].map(([check, statuses]) => ({ check, statuses }));
}

/** The checks of a task's probe set that are quarantined now (see `quarantinedChecks` for the rule). */
export function quarantinedChecksOf(db: StoreDb, at: { task: string; probeSet: string }): QuarantinedCheck[] {
  return quarantinedChecks(knownGoodHistories(db, at));
}
