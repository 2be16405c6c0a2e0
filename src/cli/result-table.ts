import Table from "cli-table3";
import type { EvaluationResult, FailingTest } from "../core/result.js";
import { nodeId } from "../core/test-split.js";
import { renderMemoryOfRecord, renderTitle } from "../core/check-run-render.js";
import { formatSeconds } from "../core/sizes.js";

const ICON: Record<string, string> = { passed: "✓", failed: "✗", error: "!", skipped: "-" };

const SHOWN = 10;

/** One line per failing official test: its pytest id, where it failed, and its message's first line. */
export function failingLines(failing: readonly FailingTest[]): string[] {
  const lines = failing.slice(0, SHOWN).map((f) => {
    const id = nodeId({ classname: f.classname, name: f.name }, f.file ? [f.file] : []);
    const where = f.file && f.line ? ` (${f.file}:${f.line})` : "";
    const first = f.message.split("\n").find((l) => l.trim())?.trim() ?? "";
    return `  ${ICON[f.kind === "failure" ? "failed" : "error"]} ${id}${where}${first ? ` — ${first}` : ""}`;
  });
  if (failing.length > SHOWN) lines.push(`  … and ${failing.length - SHOWN} more (--format json lists them all)`);
  return lines;
}

/** The terminal view of one result: a header, then a table of every probe check. */
export function renderResultTable(result: EvaluationResult): string {
  const lines: string[] = [];
  lines.push(`${result.task.id}: ${result.verdict.toUpperCase()} — ${renderTitle(result)}`);
  const o = result.official;
  if (o) {
    const c = o.counts;
    lines.push(`official tests: ${c.passed} passed, ${c.failed} failed, ${c.errors} errors, ${c.skipped} skipped in ${formatSeconds(o.durationS)}${o.reason ? ` (${o.reason})` : ""}`);
    lines.push(...failingLines(o.failing));
  }
  const memory = renderMemoryOfRecord(result);
  if (memory) lines.push(`memory of record: ${memory}`);
  for (const r of result.workspaceResets) lines.push(`judge file ${r.action}: ${r.path} — ${r.why}`);
  if (result.error) lines.push(`error in ${result.error.phase}: ${result.error.message}`);
  if (result.probes.length) {
    const t = new Table({ head: ["", "probe check", "category", "where", "message"], colWidths: [3, 34, 12, 26, 60], wordWrap: true, style: { head: [], border: [] }, chars: { mid: "", "left-mid": "", "mid-mid": "", "right-mid": "" } });
    for (const p of result.probes) {
      const where = p.location ? `${p.location.path}${p.location.line ? `:${p.location.line}` : ""}` : "";
      t.push([ICON[p.status] ?? "?", p.id, p.category, where, p.message]);
    }
    lines.push(t.toString());
  }
  return lines.join("\n");
}

/** Several results side by side (`probegate eval` with several submissions): one row each. */
export function renderBatchTable(names: readonly string[], results: readonly EvaluationResult[]): string {
  const t = new Table({ head: ["submission", "verdict", "official", "failed probe checks", "time", "GPU·s"], style: { head: [], border: [] } });
  results.forEach((r, i) => {
    const bad = r.probes.filter((p) => p.status === "failed" || p.status === "error").map((p) => p.id);
    const o = r.official;
    t.push([names[i] ?? "", r.verdict, o ? (o.passed ? `${o.counts.passed} passed` : (o.reason ?? "failed")) : "-", bad.join(", "), formatSeconds(r.durations.totalS), r.gpuSeconds.toFixed(1)]);
  });
  return t.toString();
}
