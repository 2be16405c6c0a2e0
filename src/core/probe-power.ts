import type { Expectation } from "./demo-expectation.js";
import type { Category, CheckStatus } from "./probe-check.js";
import type { EvaluationResult, Verdict } from "./result.js";

/** One example submission of a task and every evaluation of it (a correct one may run N times). */
export interface PowerColumnInput {
  /** The example's file name, as expected.yml names it. */
  submission: string;
  expectation: Expectation;
  results: ReadonlyArray<EvaluationResult>;
}

/** A column of the matrix: one example submission, what it should be and what it was. */
export interface PowerColumn {
  submission: string;
  /** Expected `resolved`: the reference or an alternative-correct design. */
  correct: boolean;
  expected: { verdict: Verdict; failedCategories: Category[] };
  runs: number;
  verdicts: Partial<Record<Verdict, number>>;
  /** Why the first run with another verdict than the expected one got it (whyNot), where one did. */
  unexpected?: string;
}

/** How one check did on one column: counts over that column's runs (absent: the check did not report). */
export interface PowerCell {
  passed: number;
  failed: number;
  error: number;
  skipped: number;
  absent: number;
}

/** A row of the matrix: one check of one probe file. */
export interface PowerRow {
  probe: string;
  check: string;
  category: Category;
  requirements: string[];
  cells: PowerCell[];
}

/** Something validation found; `error` fails it, `warning` is reported only. */
export interface PowerFinding {
  level: "error" | "warning";
  kind: "probe-catches-nothing" | "check-catches-nothing" | "fails-correct" | "flaw-not-caught" | "unexpected-verdict" | "not-evaluated" | "interrupted" | "requirement-unchecked" | "requirement-undeclared";
  /** The probe file, check id, submission or requirement it is about. */
  subject: string;
  message: string;
}

/** False rejections of one correct submission over its runs. */
export interface FalseRejections {
  submission: string;
  runs: number;
  rejected: number;
  /** Per check id: in how many runs it failed or errored. */
  byCheck: Record<string, number>;
}

/**
 * What a power run evaluated: `all` the examples (the probes' power and their false rejections), or
 * `correct-only` — only the correct ones, for more runs of them after a full run: false rejections
 * only, nothing about what the probes catch.
 */
export type PowerScope = "all" | "correct-only";

/** The power report of one task: the probes × submissions matrix and what it shows. */
export interface PowerReport {
  task: string;
  scope: PowerScope;
  probeSet: string | null;
  /** The requirement ids task.yml declares: what requirement coverage was judged against. */
  requirements: string[];
  columns: PowerColumn[];
  rows: PowerRow[];
  falseRejections: FalseRejections[];
  findings: PowerFinding[];
  ok: boolean;
}

const isCorrect = (e: Expectation) => e.verdict === "resolved";
const emptyCell = (): PowerCell => ({ passed: 0, failed: 0, error: 0, skipped: 0, absent: 0 });
const rowKey = (probe: string, check: string) => `${probe}\u0000${check}`;

function buildRows(inputs: ReadonlyArray<PowerColumnInput>): PowerRow[] {
  const rows = new Map<string, PowerRow>();
  inputs.forEach((col, c) => {
    for (const result of col.results) {
      for (const p of result.probes) {
        const key = rowKey(p.probe, p.id);
        let row = rows.get(key);
        if (!row) {
          row = { probe: p.probe, check: p.id, category: p.category, requirements: [], cells: inputs.map(emptyCell) };
          rows.set(key, row);
        }
        for (const r of p.requirements ?? []) if (!row.requirements.includes(r)) row.requirements.push(r);
        const cell = row.cells[c] as PowerCell;
        cell[p.status satisfies CheckStatus] += 1;
      }
    }
  });
  const sorted = [...rows.values()].sort((a, b) => a.probe.localeCompare(b.probe) || a.check.localeCompare(b.check));
  for (const row of sorted) {
    row.requirements.sort();
    row.cells.forEach((cell, c) => {
      const runs = inputs[c]?.results.length ?? 0;
      cell.absent = runs - (cell.passed + cell.failed + cell.error + cell.skipped);
    });
  }
  return sorted;
}

/** Flawed examples the probes ran on (at least once): they are what a probe can catch. */
function probedFlaws(inputs: ReadonlyArray<PowerColumnInput>): number[] {
  return inputs.flatMap((col, c) => (col.expectation.verdict === "probe-rejected" && col.results.length > 0 ? [c] : []));
}

function catchFindings(rows: PowerRow[], inputs: ReadonlyArray<PowerColumnInput>): PowerFinding[] {
  const flaws = probedFlaws(inputs);
  const catches = (row: PowerRow) => flaws.some((c) => (row.cells[c]?.failed ?? 0) > 0);
  const findings: PowerFinding[] = [];
  const byProbe = new Map<string, PowerRow[]>();
  for (const row of rows) byProbe.set(row.probe, [...(byProbe.get(row.probe) ?? []), row]);
  for (const [probe, checks] of byProbe) {
    if (!checks.some(catches)) {
      findings.push({
        level: "error",
        kind: "probe-catches-nothing",
        subject: probe,
        message: `probe ${probe} catches nothing: none of its ${checks.length} checks fails any of the ${flaws.length} flawed examples${flaws.length < inputs.filter((i) => i.expectation.verdict === "probe-rejected").length ? " that were evaluated" : ""}`,
      });
      continue;
    }
    for (const row of checks.filter((r) => !catches(r))) {
      findings.push({ level: "warning", kind: "check-catches-nothing", subject: `${probe}/${row.check}`, message: `check ${row.check} (${probe}, ${row.category}) fails none of the flawed examples` });
    }
  }
  return findings;
}

function correctnessFindings(rows: PowerRow[], inputs: ReadonlyArray<PowerColumnInput>): PowerFinding[] {
  const findings: PowerFinding[] = [];
  inputs.forEach((col, c) => {
    if (!isCorrect(col.expectation)) return;
    for (const row of rows) {
      const cell = row.cells[c] as PowerCell;
      const bad = cell.failed + cell.error;
      if (bad === 0) continue;
      const what = [cell.failed && `failed ${cell.failed}`, cell.error && `errored ${cell.error}`].filter(Boolean).join(" and ");
      findings.push({
        level: "error",
        kind: "fails-correct",
        subject: `${row.probe}/${row.check}`,
        message: `check ${row.check} (${row.probe}, ${row.category}) ${what} of ${col.results.length} runs of the correct submission ${col.submission}`,
      });
    }
  });
  return findings;
}

/**
 * Why a run got its verdict, specific enough to act on from the report alone (the evaluation's own
 * result may be gone): which official test failed and how, which check failed, or the harness error.
 */
export function whyNot(r: EvaluationResult): string {
  const clip = (s: string) => (s.length > 160 ? `${s.slice(0, 157)}…` : s);
  if (r.verdict === "error" && r.error) return clip(`${r.reason}: ${r.error.message}`);
  if (r.verdict === "official-failed" && r.official) {
    const first = r.official.failing[0];
    const more = r.official.failing.length > 1 ? ` (+${r.official.failing.length - 1} more)` : "";
    const detail = first ? `; first: ${first.name}${first.message ? ` — ${clip(first.message.split("\n")[0] ?? "")}` : ""}${more}` : "";
    return `${r.official.reason ?? r.reason}${detail}`;
  }
  const failed = r.probes.filter((p) => p.status === "failed" || p.status === "error");
  if (failed.length) return `${r.reason}: ${failed.map((p) => `${p.id} ${p.status}`).join(", ")}`;
  return r.reason;
}

function flawFindings(rows: PowerRow[], inputs: ReadonlyArray<PowerColumnInput>, cutBy: string): PowerFinding[] {
  const findings: PowerFinding[] = [];
  inputs.forEach((col, c) => {
    const want = col.expectation;
    if (col.results.length === 0) {
      // Cut off by --budget or a signal: what the probes do on it is unknown, which is not the same as "not caught".
      findings.push({ level: "error", kind: "not-evaluated", subject: col.submission, message: `${col.submission} was not evaluated (${cutBy} first): nothing is known of it; run again with more time` });
      return;
    }
    const wrong = col.results.filter((r) => r.verdict !== want.verdict);
    if (wrong.length) {
      const tally = [...new Set(wrong.map((r) => r.verdict))].map((v) => `${v} ${wrong.filter((r) => r.verdict === v).length}×`).join(", ");
      const runs = col.results.length > 1 ? `${wrong.length} of ${col.results.length} runs` : "its run";
      findings.push({ level: "error", kind: "unexpected-verdict", subject: col.submission, message: `${col.submission}: ${runs} not ${want.verdict} (${tally}) — ${whyNot(wrong[0] as EvaluationResult)}` });
    }
    if (want.verdict !== "probe-rejected") return;
    for (const category of new Set(want.failedCategories)) {
      const caught = rows.some((row) => row.category === category && (row.cells[c]?.failed ?? 0) > 0);
      if (!caught) {
        findings.push({
          level: "error",
          kind: "flaw-not-caught",
          subject: col.submission,
          message: `flawed example ${col.submission} is not caught by any ${category} check (expected: ${want.failedCategories.join(", ")}${want.why ? ` — ${want.why}` : ""})`,
        });
      }
    }
  });
  return findings;
}

/**
 * Every requirement must be named by a check that ran (passed or failed, not skipped) on the
 * reference — the example called `reference.*`, else every correct example — and every id a
 * check names must be declared.
 */
function requirementFindings(rows: PowerRow[], inputs: ReadonlyArray<PowerColumnInput>, declared: ReadonlyArray<string>): PowerFinding[] {
  const correct = inputs.flatMap((col, c) => (isCorrect(col.expectation) ? [c] : []));
  const reference = correct.filter((c) => /^reference\b/.test(inputs[c]?.submission ?? ""));
  const on = reference.length ? reference : correct;
  const ran = new Set<string>();
  for (const row of rows) {
    if (on.some((c) => ((row.cells[c]?.passed ?? 0) + (row.cells[c]?.failed ?? 0)) > 0)) for (const r of row.requirements) ran.add(r);
  }
  const where = reference.length ? "the reference" : "any correct submission";
  const findings: PowerFinding[] = declared
    .filter((id) => !ran.has(id))
    .map((id) => ({ level: "error" as const, kind: "requirement-unchecked" as const, subject: id, message: `requirement ${id} is named by no check that ran on ${where}` }));
  const known = new Set(declared);
  for (const row of rows) {
    for (const r of row.requirements.filter((id) => !known.has(id))) {
      findings.push({ level: "error", kind: "requirement-undeclared", subject: r, message: `check ${row.check} (${row.probe}) names requirement ${r}, which task.yml does not declare` });
    }
  }
  return findings;
}

function falseRejections(rows: PowerRow[], inputs: ReadonlyArray<PowerColumnInput>): FalseRejections[] {
  return inputs.flatMap((col, c) => {
    if (!isCorrect(col.expectation)) return [];
    const byCheck: Record<string, number> = {};
    for (const row of rows) {
      const cell = row.cells[c] as PowerCell;
      if (cell.failed + cell.error > 0) byCheck[row.check] = (byCheck[row.check] ?? 0) + cell.failed + cell.error;
    }
    return [{ submission: col.submission, runs: col.results.length, rejected: col.results.filter((r) => r.verdict !== "resolved").length, byCheck }];
  });
}

/**
 * The power of a task's probes, from evaluations of its examples: which check passes the correct
 * submissions and which flaw each catches, in which category. A probe file none of whose checks
 * fails a flawed example, a check that fails or errors on a correct submission, a flawed example no
 * check of its expected category catches, a verdict other than the expected one, and a declared
 * requirement no check ran on fail validation; a single check that catches nothing is a warning.
 *
 * With scope `correct-only` the flawed examples were left out by choice: their inputs (and any
 * results they carry) are dropped, and so are the findings only they can give (catches nothing,
 * flaw not caught); what the correct ones show is judged as in a full run.
 *
 * A run `interrupted` by a signal is judged on the evaluations that finished, and fails validation
 * saying how many it abandoned and never started.
 */
/** A power run stopped by a signal: the evaluations it abandoned mid-way and those it never started. */
export interface PowerInterruption {
  signal: string;
  abandoned: number;
  notStarted: number;
}

export function analysePower(task: string, allInputs: ReadonlyArray<PowerColumnInput>, requirements: ReadonlyArray<string>, scope: PowerScope = "all", interrupted?: PowerInterruption): PowerReport {
  const inputs = scope === "correct-only" ? allInputs.filter((col) => isCorrect(col.expectation)) : allInputs;
  const rows = buildRows(inputs);
  const columns: PowerColumn[] = inputs.map((col) => {
    const verdicts: Partial<Record<Verdict, number>> = {};
    for (const r of col.results) verdicts[r.verdict] = (verdicts[r.verdict] ?? 0) + 1;
    const wrong = col.results.find((r) => r.verdict !== col.expectation.verdict);
    return {
      submission: col.submission,
      correct: isCorrect(col.expectation),
      expected: { verdict: col.expectation.verdict, failedCategories: [...col.expectation.failedCategories] },
      runs: col.results.length,
      verdicts,
      ...(wrong ? { unexpected: whyNot(wrong) } : {}),
    };
  });
  const finished = inputs.reduce((n, col) => n + col.results.length, 0);
  const findings: PowerFinding[] = [
    ...(interrupted
      ? [{ level: "error" as const, kind: "interrupted" as const, subject: task, message: `interrupted by ${interrupted.signal}: ${interrupted.abandoned} evaluations in flight were abandoned and ${interrupted.notStarted} not started; this report covers the ${finished} that finished` }]
      : []),
    ...(scope === "all" ? catchFindings(rows, inputs) : []),
    ...correctnessFindings(rows, inputs),
    ...flawFindings(rows, inputs, interrupted ? `interrupted by ${interrupted.signal}` : "the --budget ran out"),
    ...requirementFindings(rows, inputs, requirements),
  ];
  const sets = new Set(inputs.flatMap((col) => col.results.map((r) => r.task.probeSet)));
  return {
    task,
    scope,
    probeSet: sets.size === 1 ? ([...sets][0] as string) : null,
    requirements: [...requirements],
    columns,
    rows,
    falseRejections: falseRejections(rows, inputs),
    findings,
    ok: !findings.some((f) => f.level === "error"),
  };
}

/** One cell as the matrix prints it: pass / FAIL / err / skip / — for one run, `k/N failed` for repeats. */
export function cellText(cell: PowerCell, runs: number): string {
  if (runs === 0) return "—";
  if (runs === 1) {
    if (cell.failed) return "FAIL";
    if (cell.error) return "err";
    if (cell.skipped) return "skip";
    if (cell.passed) return "pass";
    return "—";
  }
  if (cell.absent === runs) return "—";
  const parts = [`${cell.failed}/${runs} failed`];
  if (cell.error) parts.push(`${cell.error} err`);
  if (cell.skipped) parts.push(`${cell.skipped} skip`);
  return parts.join(", ");
}
