import type { Expectation } from "../demo-expectation.js";
import type { Category, CheckStatus } from "../probe-check.js";
import type { EvaluationResult, Verdict } from "../result.js";

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
  expected: { verdict: Verdict; failedCategories: Category[]; why?: string };
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
function probedFlaws(columns: ReadonlyArray<PowerColumn>): number[] {
  return columns.flatMap((col, c) => (col.expected.verdict === "probe-rejected" && col.runs > 0 ? [c] : []));
}

function catchFindings(rows: PowerRow[], columns: ReadonlyArray<PowerColumn>): PowerFinding[] {
  const flaws = probedFlaws(columns);
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
        message: `probe ${probe} catches nothing: none of its ${checks.length} checks fails any of the ${flaws.length} flawed examples${flaws.length < columns.filter((col) => col.expected.verdict === "probe-rejected").length ? " that were evaluated" : ""}`,
      });
      continue;
    }
    for (const row of checks.filter((r) => !catches(r))) {
      findings.push({ level: "warning", kind: "check-catches-nothing", subject: `${probe}/${row.check}`, message: `check ${row.check} (${probe}, ${row.category}) fails none of the flawed examples` });
    }
  }
  return findings;
}

function correctnessFindings(rows: PowerRow[], columns: ReadonlyArray<PowerColumn>): PowerFinding[] {
  const findings: PowerFinding[] = [];
  columns.forEach((col, c) => {
    if (!col.correct) return;
    for (const row of rows) {
      const cell = row.cells[c] as PowerCell;
      const bad = cell.failed + cell.error;
      if (bad === 0) continue;
      const what = [cell.failed && `failed ${cell.failed}`, cell.error && `errored ${cell.error}`].filter(Boolean).join(" and ");
      findings.push({
        level: "error",
        kind: "fails-correct",
        subject: `${row.probe}/${row.check}`,
        message: `check ${row.check} (${row.probe}, ${row.category}) ${what} of ${col.runs} runs of the correct submission ${col.submission}`,
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

function flawFindings(rows: PowerRow[], columns: ReadonlyArray<PowerColumn>, cutBy: string): PowerFinding[] {
  const findings: PowerFinding[] = [];
  columns.forEach((col, c) => {
    const want = col.expected;
    if (col.runs === 0) {
      // Cut off by --budget or a signal: what the probes do on it is unknown, which is not the same as "not caught".
      findings.push({ level: "error", kind: "not-evaluated", subject: col.submission, message: `${col.submission} was not evaluated (${cutBy} first): nothing is known of it; run again with more time` });
      return;
    }
    const wrong = col.runs - (col.verdicts[want.verdict] ?? 0);
    if (wrong > 0) {
      const tally = Object.entries(col.verdicts)
        .filter(([v]) => v !== want.verdict)
        .map(([v, n]) => `${v} ${n}×`)
        .join(", ");
      const runs = col.runs > 1 ? `${wrong} of ${col.runs} runs` : "its run";
      findings.push({ level: "error", kind: "unexpected-verdict", subject: col.submission, message: `${col.submission}: ${runs} not ${want.verdict} (${tally})${col.unexpected ? ` — ${col.unexpected}` : ""}` });
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
function requirementFindings(rows: PowerRow[], columns: ReadonlyArray<PowerColumn>, declared: ReadonlyArray<string>): PowerFinding[] {
  const correct = columns.flatMap((col, c) => (col.correct ? [c] : []));
  const reference = correct.filter((c) => /^reference\b/.test(columns[c]?.submission ?? ""));
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

function falseRejections(columns: ReadonlyArray<PowerColumn>, rows: PowerRow[]): FalseRejections[] {
  return columns.flatMap((col, c) => {
    if (!col.correct) return [];
    const byCheck: Record<string, number> = {};
    for (const row of rows) {
      const cell = row.cells[c] as PowerCell;
      if (cell.failed + cell.error > 0) byCheck[row.check] = (byCheck[row.check] ?? 0) + cell.failed + cell.error;
    }
    return [{ submission: col.submission, runs: col.runs, rejected: col.runs - (col.verdicts.resolved ?? 0), byCheck }];
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
  const columns: PowerColumn[] = inputs.map((col) => {
    const verdicts: Partial<Record<Verdict, number>> = {};
    for (const r of col.results) verdicts[r.verdict] = (verdicts[r.verdict] ?? 0) + 1;
    const wrong = col.results.find((r) => r.verdict !== col.expectation.verdict);
    const e = col.expectation;
    return {
      submission: col.submission,
      correct: isCorrect(e),
      expected: { verdict: e.verdict, failedCategories: [...e.failedCategories], ...(e.why ? { why: e.why } : {}) },
      runs: col.results.length,
      verdicts,
      ...(wrong ? { unexpected: whyNot(wrong) } : {}),
    };
  });
  const sets = new Set(inputs.flatMap((col) => col.results.map((r) => r.task.probeSet)));
  const probeSet = sets.size === 1 ? ([...sets][0] as string) : null;
  return judgePower({ task, scope, probeSet, requirements: [...requirements], columns, rows: buildRows(inputs) }, interrupted);
}

/** What validation finds in a matrix: the findings and false rejections of `analysePower`, from the columns and rows alone. */
function judgePower(m: Omit<PowerReport, "falseRejections" | "findings" | "ok">, interrupted?: PowerInterruption): PowerReport {
  const { rows, columns } = m;
  const finished = columns.reduce((n, col) => n + col.runs, 0);
  const findings: PowerFinding[] = [
    ...(interrupted
      ? [{ level: "error" as const, kind: "interrupted" as const, subject: m.task, message: `interrupted by ${interrupted.signal}: ${interrupted.abandoned} evaluations in flight were abandoned and ${interrupted.notStarted} not started; this report covers the ${finished} that finished` }]
      : []),
    ...(m.scope === "all" ? catchFindings(rows, columns) : []),
    ...correctnessFindings(rows, columns),
    ...flawFindings(rows, columns, interrupted ? `interrupted by ${interrupted.signal}` : "the --budget ran out"),
    ...requirementFindings(rows, columns, m.requirements),
  ];
  return { ...m, falseRejections: falseRejections(columns, rows), findings, ok: !findings.some((f) => f.level === "error") };
}

/**
 * One report from several power reports of one task and probe set (runs on several runners, or
 * calls cut short by a time limit), judged again on the summed matrix: a probe that caught nothing
 * in one call may catch in another. Cells, runs and verdicts are summed per column and check; a
 * check that did not report in one report counts as absent for that report's runs. The flawed
 * columns come from the full reports only (a `correct-only` one has none); with none, the merge is
 * `correct-only` too. Throws where the reports are of different tasks or probe sets, lack the
 * requirement list (written before reports carried it), or a correct-only report holds a flawed column.
 */
export function mergePowerReports(reports: ReadonlyArray<PowerReport>): PowerReport {
  const first = reports[0];
  if (!first) throw new Error("mergePowerReports: no reports");
  const tasks = [...new Set(reports.map((r) => r.task))];
  if (tasks.length > 1) throw new Error(`reports of different tasks (${tasks.join(", ")}): merge one task's reports at a time`);
  const sets = [...new Set(reports.map((r) => r.probeSet ?? "none"))];
  if (sets.length > 1) throw new Error(`${first.task}: reports of different probe sets (${sets.map((x) => x.slice(0, 19)).join(", ")}): the probes changed between them, so their runs do not add up; merge the reports of one probe set`);
  if (reports.some((r) => !Array.isArray(r.requirements))) throw new Error(`${first.task}: a report has no requirements list (it predates them): run it again to merge it`);
  // A report written before reports carried a scope was a full run.
  const scopeOf = (r: PowerReport): PowerScope => r.scope ?? "all";
  for (const r of reports) {
    const flawed = r.columns.find((c) => !c.correct);
    if (scopeOf(r) === "correct-only" && flawed) throw new Error(`${first.task}: a correct-only report has a column of the flawed example ${flawed.submission}: it is not what validate --power --correct-only writes`);
  }
  const scope: PowerScope = reports.some((r) => scopeOf(r) === "all") ? "all" : "correct-only";
  const columns: PowerColumn[] = [];
  const at = new Map<string, number>();
  for (const r of [...reports].sort((a, b) => (scopeOf(a) === "all" ? 0 : 1) - (scopeOf(b) === "all" ? 0 : 1))) {
    for (const c of r.columns) {
      if (!at.has(c.submission)) {
        at.set(c.submission, columns.length);
        columns.push({ ...c, expected: { ...c.expected, failedCategories: [...c.expected.failedCategories] }, runs: 0, verdicts: {}, unexpected: undefined });
      }
      const col = columns[at.get(c.submission) as number] as PowerColumn;
      col.runs += c.runs;
      for (const [v, n] of Object.entries(c.verdicts) as Array<[Verdict, number]>) col.verdicts[v] = (col.verdicts[v] ?? 0) + n;
      col.unexpected ??= c.unexpected;
    }
  }
  for (const col of columns) if (col.unexpected === undefined) delete col.unexpected;
  const rows = new Map<string, PowerRow>();
  for (const r of reports) {
    for (const row of r.rows) {
      const key = rowKey(row.probe, row.check);
      if (!rows.has(key)) rows.set(key, { probe: row.probe, check: row.check, category: row.category, requirements: [], cells: columns.map(emptyCell) });
      const merged = rows.get(key) as PowerRow;
      for (const id of row.requirements) if (!merged.requirements.includes(id)) merged.requirements.push(id);
    }
  }
  for (const r of reports) {
    const present = new Map(r.rows.map((row) => [rowKey(row.probe, row.check), row]));
    for (const [key, merged] of rows) {
      const row = present.get(key);
      r.columns.forEach((c, i) => {
        const cell = merged.cells[at.get(c.submission) as number] as PowerCell;
        const from = row?.cells[i] ?? { ...emptyCell(), absent: c.runs };
        for (const k of ["passed", "failed", "error", "skipped", "absent"] as const) cell[k] += from[k];
      });
    }
  }
  const sorted = [...rows.values()].sort((a, b) => a.probe.localeCompare(b.probe) || a.check.localeCompare(b.check));
  for (const row of sorted) row.requirements.sort();
  const requirements = [...new Set(reports.flatMap((r) => r.requirements))];
  return judgePower({ task: first.task, scope, probeSet: first.probeSet, requirements, columns, rows: sorted });
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
