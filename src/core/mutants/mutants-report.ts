import type { MutantFinding, MutantRecord, MutantsScore } from "./mutants-score.js";

/** The report of `validate --mutants` for one task (`tasks[]` of the JSON output). */
export interface MutantsTaskReport extends Omit<MutantsScore, "survivors" | "equivalents" | "timedOut" | "errors"> {
  task: string;
  probeSet: string;
  survivors: MutantSummary[];
  equivalents: Array<MutantSummary & { reason: string }>;
  timedOut: MutantSummary[];
  errors: MutantSummary[];
  /** How the mutants were made: the operators run, those left out (do not compile, duplicates), the files and lines mutated. */
  generation: { operators: number; invalid: number; duplicate: number; files: Array<{ path: string; lines: number[] }> };
  run: {
    /** Mutants evaluated in this run (not from the cache). */
    evaluated: number;
    cached: number;
    /** Mutants made but not evaluated: --budget ran out first. */
    notEvaluated: number;
    /** The wall clock each mutant's test and probe runs had, in seconds. */
    mutantTimeoutS: number;
    wallS: number;
    /** Mutants evaluated in this run per minute of wall clock (null when none was). */
    mutantsPerMinute: number | null;
    jobs: number;
  };
}

/** A mutant as the report lists it: where, what changed, why it ended as it did, and its diff. */
export interface MutantSummary {
  id: string;
  location: string;
  change: { before: string; after: string };
  detail: string;
  diff: string;
}

/** The report's view of one mutant. */
export function summarise(r: MutantRecord): MutantSummary {
  return { id: r.id, location: `${r.path}:${r.line}:${r.column + 1}`, change: r.change, detail: r.detail, diff: r.diff };
}

const pct = (x: number | null) => (x === null ? "n/a" : `${(100 * x).toFixed(1)}%`);
const score = (x: number | null) => (x === null ? "n/a (nothing to kill)" : x.toFixed(3));

function findingLines(findings: readonly MutantFinding[]): string[] {
  return findings.map((f) => `${f.level === "error" ? "✗" : "!"} ${f.message}`);
}

/** The report as text for a terminal. */
export function renderMutantsText(r: MutantsTaskReport): string {
  const m = r.mutants;
  const lines = [
    `${r.ok ? "✓" : "✗"} ${r.task}: ${m.total} mutants of the reference change — ${m.killedByOfficial} killed by the official tests, ${m.killedByProbes} by the probes, ${m.survived} survived, ${m.equivalent} equivalent, ${m.timedOut} timed out`,
    `  officialSurvivalRate ${pct(m.officialSurvivalRate)} (pass the official tests)   probeScore ${score(m.probeScore)} (threshold ${r.threshold})`,
    `  ${r.run.evaluated} evaluated, ${r.run.cached} from the cache${r.run.notEvaluated ? `, ${r.run.notEvaluated} not evaluated (--budget)` : ""}; ${r.run.mutantsPerMinute === null ? "" : `${r.run.mutantsPerMinute.toFixed(1)} mutants/min at --jobs ${r.run.jobs}; `}mutant wall clock ${r.run.mutantTimeoutS} s`,
  ];
  for (const s of r.survivors) lines.push(`  survived ${s.id} at ${s.location}`, `    - ${s.change.before}`, `    + ${s.change.after}`);
  for (const s of r.timedOut) lines.push(`  timed out ${s.id} at ${s.location}: ${s.detail}`);
  for (const e of r.equivalents) lines.push(`  equivalent ${e.id}: ${e.reason}`);
  lines.push(...findingLines(r.findings).map((l) => `  ${l}`));
  return `${lines.join("\n")}\n`;
}

/** The report as markdown (a PR comment or bench/RESULTS.md). */
export function renderMutantsMarkdown(r: MutantsTaskReport): string {
  const m = r.mutants;
  const lines = [
    `### ${r.ok ? "✅" : "❌"} ${r.task}: mutants of the reference change`,
    "",
    "| mutants | killed by official | killed by probes | survived | equivalent | timed out | officialSurvivalRate | probeScore |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|",
    `| ${m.total} | ${m.killedByOfficial} | ${m.killedByProbes} | ${m.survived} | ${m.equivalent} | ${m.timedOut} | ${pct(m.officialSurvivalRate)} | ${score(m.probeScore)} |`,
    "",
  ];
  if (r.survivors.length) {
    lines.push("**Survivors** (pass the official tests and every probe):", "");
    for (const s of r.survivors) lines.push(`- \`${s.id}\` at \`${s.location}\``, "", "```diff", `- ${s.change.before}`, `+ ${s.change.after}`, "```", "");
  }
  lines.push(...findingLines(r.findings).map((l) => `- ${l}`));
  return `${lines.join("\n")}\n`;
}
