import { basename, resolve } from "node:path";
import type { QuarantinedCheck } from "../core/quarantine.js";
import type { EvaluationResult } from "../core/result.js";
import type { LoadedTask } from "../engine/task-load.js";
import { openStore, type StoreDb } from "../store/db.js";
import { quarantinedChecksOf, recordKnownGoodOutcomes } from "../store/probe-health.js";

/** Opens (creating if needed) the store that keeps known-good outcomes: usually the app's own. */
export function openPowerStore(file: string): StoreDb {
  return openStore(resolve(file));
}

/** Records one run of a correct example as known-good outcomes of every check it ran. */
export function recordRun(db: StoreDb, r: { task: LoadedTask; example: { patch: string }; run: number; runs: number; result: EvaluationResult }): void {
  const submission = `${basename(r.example.patch)}${r.runs > 1 ? ` run ${r.run + 1}/${r.runs}` : ""}`;
  recordKnownGoodOutcomes(db, { task: r.task.spec.id, probeSet: r.result.task.probeSet, submission, source: "validate --power", at: new Date() }, r.result.probes);
}

/** The task's checks quarantined now for this probe set. */
export function quarantinedNow(db: StoreDb, task: string, probeSet: string): QuarantinedCheck[] {
  return quarantinedChecksOf(db, { task, probeSet });
}
