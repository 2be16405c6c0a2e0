import type { MutantOutcome } from "./mutant-outcome.js";
import type { EquivalentMark } from "./mutants-file.js";

/** One mutant of the reference change, as a submission (the generator's output). */
export interface GeneratedMutant {
  id: string;
  operator: string;
  path: string;
  line: number;
  column: number;
  occurrence: number;
  /** Unified diff from the task's base to the reference change with this one mutation. */
  diff: string;
  /** Just the mutated line(s): the reference's line and the mutant's. */
  change: { before: string; after: string };
}

/** One evaluated mutant, as the report keeps it. */
export interface MutantRecord extends GeneratedMutant {
  outcome: MutantOutcome;
  passedOfficial: boolean;
  detail: string;
  durationS: number;
  /** Taken from the cache (not evaluated in this run). */
  cached: boolean;
}

/** The counts and figures of `tasks[].mutants` in the JSON report. */
export interface MutantCounts {
  total: number;
  killedByOfficial: number;
  killedByProbes: number;
  /** Survivors of the official tests and the probes that no mark in mutants.yml calls equivalent. */
  survived: number;
  /** Survivors marked equivalent in mutants.yml. */
  equivalent: number;
  timedOut: number;
  /** Mutants that pass the official tests ÷ mutants (the STING figure); null with no mutant. */
  officialSurvivalRate: number | null;
  /** killedByProbes ÷ (survivors of the official tests − equivalent − timed out or errored in the probe phase); null when nothing is left to kill. */
  probeScore: number | null;
}

/** A finding about the marks or the run, for people. */
export interface MutantFinding {
  level: "error" | "warning";
  message: string;
}

/** The scored mutants of one task. */
export interface MutantsScore {
  mutants: MutantCounts;
  survivors: MutantRecord[];
  equivalents: Array<{ mutant: MutantRecord; reason: string }>;
  timedOut: MutantRecord[];
  errors: MutantRecord[];
  threshold: number;
  ok: boolean;
  findings: MutantFinding[];
}

/**
 * Scores the evaluated mutants of one task. A survivor is equivalent only when mutants.yml marks
 * it (an unmarked one is never dropped); a mark on a mutant the tests or probes kill is an error
 * (the mark is wrong: something tells it apart), and a mark that names no mutant is a warning (a
 * run cut by --budget may not have made it; otherwise the mark is stale). `ok` when the probe
 * score reaches the threshold (or nothing is left to kill), no mutant ended in an error, and no
 * mark is wrong.
 */
export function scoreMutants(records: readonly MutantRecord[], marks: readonly EquivalentMark[], threshold: number, complete: boolean): MutantsScore {
  const byId = new Map(records.map((r) => [r.id, r]));
  const findings: MutantFinding[] = [];
  const equivalentIds = new Map<string, string>();
  for (const mark of marks) {
    const mutant = byId.get(mark.id);
    if (!mutant) {
      findings.push({ level: "warning", message: `mutants.yml marks ${mark.id} equivalent, but no mutant has that id${complete ? " (a stale mark: remove it or fix the id)" : " in this run (cut short by --budget)"}` });
      continue;
    }
    if (mutant.outcome === "killedByOfficial" || mutant.outcome === "killedByProbes") {
      findings.push({ level: "error", message: `mutants.yml marks ${mark.id} equivalent, but it is ${mutant.outcome === "killedByOfficial" ? "killed by the official tests" : "killed by the probes"} (${mutant.detail}): something does tell it apart; remove the mark` });
      continue;
    }
    if (mutant.outcome === "survived") equivalentIds.set(mark.id, mark.reason);
  }
  const is = (o: MutantOutcome) => records.filter((r) => r.outcome === o);
  const survivorsAll = is("survived");
  const survivors = survivorsAll.filter((r) => !equivalentIds.has(r.id));
  const equivalents = survivorsAll.filter((r) => equivalentIds.has(r.id)).map((mutant) => ({ mutant, reason: equivalentIds.get(mutant.id) as string }));
  const killedByProbes = is("killedByProbes").length;
  const passedOfficial = records.filter((r) => r.passedOfficial).length;
  // Timed out or errored after passing the official tests: neither a kill nor a survivor.
  const undecided = records.filter((r) => r.passedOfficial && (r.outcome === "timedOut" || r.outcome === "error")).length;
  const toKill = passedOfficial - equivalents.length - undecided;
  // A hang in the probes is left out of the score, not dropped from sight: the gate does not
  // resolve such a mutant, but the probes did not tell it apart either (it may be a survivor).
  const probeHangs = records.filter((r) => r.passedOfficial && r.outcome === "timedOut");
  if (probeHangs.length) findings.push({ level: "warning", message: `${probeHangs.length} mutant${probeHangs.length === 1 ? "" : "s"} passed the official tests and then hung in the probes (${probeHangs.map((r) => r.id).join(", ")}): neither a kill nor a survivor, left out of probeScore; each is listed under timedOut with its diff` });
  const probeScore = toKill > 0 ? killedByProbes / toKill : null;
  const errors = is("error");
  for (const e of errors) findings.push({ level: "error", message: `${e.id}: the evaluation ended in an error (${e.detail}); the mutant is not scored` });
  const mutants: MutantCounts = {
    total: records.length,
    killedByOfficial: is("killedByOfficial").length,
    killedByProbes,
    survived: survivors.length,
    equivalent: equivalents.length,
    timedOut: is("timedOut").length,
    officialSurvivalRate: records.length ? passedOfficial / records.length : null,
    probeScore,
  };
  if (probeScore !== null && probeScore < threshold) {
    findings.push({ level: "error", message: `probeScore ${probeScore.toFixed(3)} is under the threshold ${threshold}: ${survivors.length} mutants pass the official tests and every probe; strengthen the probes against what the prompt states, or mark a mutant equivalent in mutants.yml with the reason` });
  }
  const ok = findings.every((f) => f.level !== "error");
  return { mutants, survivors, equivalents, timedOut: is("timedOut"), errors, threshold, ok, findings };
}
