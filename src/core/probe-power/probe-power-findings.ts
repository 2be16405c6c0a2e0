import type { EvaluationResult } from "../result.js";
import type { FalseRejections, PowerCell, PowerColumn, PowerFinding, PowerRow } from "./probe-power-types.js";
// What validation finds in a power matrix: flaws no check catches, checks that catch nothing, correct
// examples rejected, requirements no check covers.

/** Flawed examples the probes ran on (at least once): they are what a probe can catch. */
function probedFlaws(columns: ReadonlyArray<PowerColumn>): number[] {
  return columns.flatMap((col, c) => (col.expected.verdict === "probe-rejected" && col.runs > 0 ? [c] : []));
}

export function catchFindings(rows: PowerRow[], columns: ReadonlyArray<PowerColumn>): PowerFinding[] {
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

export function correctnessFindings(rows: PowerRow[], columns: ReadonlyArray<PowerColumn>): PowerFinding[] {
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

export function flawFindings(rows: PowerRow[], columns: ReadonlyArray<PowerColumn>, cutBy: string): PowerFinding[] {
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
export function requirementFindings(rows: PowerRow[], columns: ReadonlyArray<PowerColumn>, declared: ReadonlyArray<string>): PowerFinding[] {
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

export function falseRejections(columns: ReadonlyArray<PowerColumn>, rows: PowerRow[]): FalseRejections[] {
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

