import { cellText, type PowerReport } from "./probe-power.js";

/** The matrix as rows of cells: probe, check, category, then one column per example submission. */
export function powerMatrix(report: PowerReport): { head: string[]; body: string[][] } {
  const head = ["probe", "check", "category", ...report.columns.map((c) => `${c.submission.replace(/\.(patch|diff)$/, "")}${c.correct ? " ✓" : ""}${c.runs > 1 ? ` ×${c.runs}` : ""}`)];
  const body = report.rows.map((row, i) => [
    i > 0 && report.rows[i - 1]?.probe === row.probe ? "" : row.probe,
    row.check,
    row.category,
    ...row.cells.map((cell, c) => cellText(cell, report.columns[c]?.runs ?? 0)),
  ]);
  const expected = ["", "expected", "", ...report.columns.map((c) => (c.correct ? "resolved" : `${c.expected.verdict}${c.expected.failedCategories.length ? ` [${c.expected.failedCategories.join(", ")}]` : ""}`))];
  const got = ["", "verdicts", "", ...report.columns.map((c) => Object.entries(c.verdicts).map(([v, n]) => (c.runs > 1 ? `${v} ${n}/${c.runs}` : v)).join(", ") || "—")];
  return { head, body: [...body, expected, got] };
}

/** One line per false-rejection tally, e.g. `reference.patch: 1 of 20 runs rejected (total-speed 1)`. */
export function falseRejectionLines(report: PowerReport): string[] {
  return report.falseRejections.map((f) => {
    const checks = Object.entries(f.byCheck).map(([id, n]) => `${id} ${n}`);
    return `${f.submission}: ${f.rejected} of ${f.runs} runs not resolved${checks.length ? ` (${checks.join(", ")})` : ""}`;
  });
}

/**
 * What a `correct-only` report cannot say, for the top of its text and markdown: it measured false
 * rejections only, so a clean one is no sign that the probes catch anything. Null for a full run.
 */
export function scopeNote(report: PowerReport): string | null {
  if (report.scope !== "correct-only") return null;
  return "Correct-only run: only the correct submissions were evaluated, so this measures false rejections only; what the probes catch (their power) needs a run without --correct-only.";
}

const md = (s: string) => s.replace(/\|/g, "\\|").replace(/\r?\n/g, " ");

/** The report as markdown: the matrix, false rejections, then findings (for bench/RESULTS.md and CI summaries). */
export function renderPowerMarkdown(report: PowerReport): string {
  const { head, body } = powerMatrix(report);
  const out = [`### ${report.ok ? "✅" : "❌"} Probe power — \`${report.task}\`${report.scope === "correct-only" ? " (false rejections only)" : ""}`, ""];
  const note = scopeNote(report);
  if (note) out.push(`> ${note}`, "");
  out.push(`| ${head.map(md).join(" | ")} |`, `|${head.map(() => "---").join("|")}|`);
  for (const r of body) out.push(`| ${r.map(md).join(" | ")} |`);
  out.push("");
  if (report.falseRejections.length) {
    out.push("False rejections of correct submissions:", "", ...falseRejectionLines(report).map((l) => `- ${md(l)}`), "");
  }
  const errors = report.findings.filter((f) => f.level === "error");
  const warnings = report.findings.filter((f) => f.level === "warning");
  if (errors.length) out.push("Validation fails:", "", ...errors.map((f) => `- ${md(f.message)}`), "");
  if (warnings.length) out.push("Warnings:", "", ...warnings.map((f) => `- ${md(f.message)}`), "");
  if (!errors.length && !warnings.length) {
    out.push(report.scope === "correct-only" ? "Every check passes every correct submission, and every requirement is checked; what the probes catch was not measured." : "Every probe catches a flaw, passes every correct submission, and every requirement is checked.", "");
  }
  return out.join("\n");
}
