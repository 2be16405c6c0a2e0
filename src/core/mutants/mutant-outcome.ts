import type { EvaluationResult } from "../result.js";

/** How one mutant's evaluation ended. */
export type MutantOutcome = "killedByOfficial" | "killedByProbes" | "survived" | "timedOut" | "error";

/** The outcome, in which phase, and a line on why (failing tests or checks). */
export interface ClassifiedMutant {
  outcome: MutantOutcome;
  /** True when the mutant passed the official tests (it counts towards officialSurvivalRate). */
  passedOfficial: boolean;
  detail: string;
}

const stoppedByClock = (message: string) => /wall-clock limit/.test(message);

/**
 * A mutant's evaluation → its outcome. A run stopped by the wall clock is `timedOut`, never a
 * kill: a hang says nothing about what the tests or probes check. A probe phase whose only
 * failures are wall-clock stops is timed out too; one real failed check beside them is a kill.
 * A probe that crashes on the mutant (a check in `error`, no harness fault) is a kill by the
 * probes: the reference ran the same probes to a result, and the gate does not resolve it.
 * Only a harness fault (the result's `error`) leaves the mutant unscored.
 */
export function classifyMutant(result: EvaluationResult): ClassifiedMutant {
  const official = result.official;
  if (result.error || !official) return { outcome: "error", passedOfficial: official?.passed ?? false, detail: result.error?.message ?? result.reason };
  if (official && !official.passed) {
    if (official.limit === "wall-clock") return { outcome: "timedOut", passedOfficial: false, detail: "official tests stopped by the wall-clock limit" };
    const tests = official.failing.map((t) => t.name).slice(0, 3);
    return { outcome: "killedByOfficial", passedOfficial: false, detail: tests.length ? `fails ${tests.join(", ")}${official.failing.length > 3 ? ", …" : ""}` : (official.reason ?? "official tests failed") };
  }
  const failed = result.probes.filter((c) => c.status === "failed");
  const real = failed.filter((c) => !stoppedByClock(c.message));
  if (real.length) return { outcome: "killedByProbes", passedOfficial: true, detail: `fails ${real.map((c) => c.id).join(", ")}` };
  if (failed.length) return { outcome: "timedOut", passedOfficial: true, detail: `probes stopped by the wall-clock limit (${failed.map((c) => c.id).join(", ")})` };
  const crashed = result.probes.filter((c) => c.status === "error");
  if (crashed.length) return { outcome: "killedByProbes", passedOfficial: true, detail: `probe crashed: ${crashed.map((c) => `${c.id} (${c.message.slice(0, 80)})`).join(", ")}` };
  return { outcome: "survived", passedOfficial: true, detail: result.reason };
}
