import { basename, resolve } from "node:path";
import { renderCheckRunWithQuarantine } from "../core/quarantine-check-run.js";
import type { EvaluationResult, Verdict } from "../core/result.js";
import { openStore } from "../store/db.js";
import { quarantinedChecksOf, recordKnownGoodOutcomes } from "../store/probe-health.js";

/**
 * `probegate eval --db`: reads the result as the app would, with the store's quarantined checks
 * set aside (printed as warnings), and with `--known-good` first records the run's outcomes as
 * those of a known-good submission (a canary run of the reference). The result file is not changed.
 */
export function readThroughStore(file: string, result: EvaluationResult, opts: { knownGood: boolean; submission: string }, write: (s: string) => void): { verdict: Verdict; markdown: string } {
  const db = openStore(resolve(file));
  try {
    const at = { task: result.task.id, probeSet: result.task.probeSet };
    if (opts.knownGood) {
      recordKnownGoodOutcomes(db, { ...at, submission: basename(opts.submission), source: "eval --known-good", at: new Date() }, result.probes);
      write(`recorded ${result.probes.length} checks of this run as known-good outcomes in ${file}\n`);
    }
    const quarantined = quarantinedChecksOf(db, at);
    const { output, verdict } = renderCheckRunWithQuarantine(result, quarantined);
    if (quarantined.length) write(`quarantined checks of this probe set: ${quarantined.map((q) => `${q.check} (failed ${q.failures} of last ${q.window} known-good)`).join(", ")}\n`);
    if (verdict !== result.verdict) write(`read with quarantined failures set aside as warnings: ${verdict} (the result says ${result.verdict})\n`);
    return { verdict, markdown: output.summary };
  } finally {
    db.close();
  }
}
