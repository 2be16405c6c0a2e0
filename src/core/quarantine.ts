import type { CheckStatus } from "./probe-check.js";
import type { EvaluationResult, ProbeResult, Verdict } from "./result.js";
import { decideVerdict } from "./verdict.js";

/** How many of a check's latest outcomes on known-good submissions the rule looks at. */
export const QUARANTINE_WINDOW = 20;
/** More failures than this in the window quarantine the check (PROBES.md: "more than 1 time in 20"). */
export const QUARANTINE_MAX_FAILURES = 1;

/** A check's latest outcomes on known-good submissions for one probe set, newest first. */
export interface KnownGoodHistory {
  check: string;
  statuses: ReadonlyArray<CheckStatus>;
}

/** A check whose failures on known-good code are no longer trusted, and the figures that say why. */
export interface QuarantinedCheck {
  check: string;
  /** Failed or errored outcomes among the latest `window` known-good ones. */
  failures: number;
  window: number;
}

/**
 * The quarantine rule: a check that failed (or errored on) a known-good submission more than
 * once in its latest 20 outcomes for the probe set is quarantined. The history is per probe set,
 * so a changed probe folder starts every check afresh.
 */
export function quarantinedChecks(histories: ReadonlyArray<KnownGoodHistory>): QuarantinedCheck[] {
  const out: QuarantinedCheck[] = [];
  for (const h of histories) {
    const recent = h.statuses.slice(0, QUARANTINE_WINDOW);
    const failures = recent.filter((s) => s === "failed" || s === "error").length;
    if (failures > QUARANTINE_MAX_FAILURES) out.push({ check: h.check, failures, window: recent.length });
  }
  return out.sort((a, b) => a.check.localeCompare(b.check));
}

/** A quarantined check's failure in one result: reported as a warning, not a rejection. */
export interface QuarantineWarning {
  probe: ProbeResult;
  quarantine: QuarantinedCheck;
}

/** How the app reads a signed result once quarantined checks are set aside. */
export interface QuarantineReading {
  verdict: Verdict;
  reason: string;
  /** The result's own verdict differs from this reading. */
  changed: boolean;
  warnings: QuarantineWarning[];
}

/**
 * Reads a result with the quarantined checks' failures and errors set aside: they become warnings,
 * and the verdict is decided again from the other checks. Only a judgement the probes made is read
 * again (official tests passed, no harness error); the result itself is not changed, so its
 * signature still holds over what the evaluator said.
 */
export function readWithQuarantine(result: EvaluationResult, quarantined: ReadonlyArray<QuarantinedCheck>): QuarantineReading {
  const byId = new Map(quarantined.map((q) => [q.check, q]));
  const warnings = result.probes.flatMap((p) => {
    const q = byId.get(p.id);
    return q && (p.status === "failed" || p.status === "error") ? [{ probe: p, quarantine: q }] : [];
  });
  if (warnings.length === 0 || !result.official?.passed || result.error) {
    return { verdict: result.verdict, reason: result.reason, changed: false, warnings: result.official?.passed && !result.error ? warnings : [] };
  }
  const setAside = new Set(warnings.map((w) => w.probe));
  const again = decideVerdict({ official: result.official, probes: result.probes.filter((p) => !setAside.has(p)) });
  const reason = `${again.reason}; ${warnings.length} failure${warnings.length === 1 ? "" : "s"} of quarantined checks set aside as warnings`;
  return { verdict: again.verdict, reason, changed: again.verdict !== result.verdict, warnings };
}
