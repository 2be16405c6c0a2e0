import type { Expectation } from "../demo-expectation.js";
import type { CheckStatus } from "../probe-check.js";
import type { Verdict } from "../result.js";
import { catchFindings, correctnessFindings, falseRejections, flawFindings, requirementFindings, whyNot } from "./probe-power-findings.js";
import type { PowerCell, PowerColumn, PowerColumnInput, PowerFinding, PowerInterruption, PowerReport, PowerRow, PowerScope } from "./probe-power-types.js";

export type * from "./probe-power-types.js";
export { whyNot } from "./probe-power-findings.js";

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
