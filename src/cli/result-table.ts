import Table from "cli-table3";
import type { EvaluationResult } from "../core/result.js";
import { renderMemoryOfRecord, renderTitle } from "../core/check-run-render.js";
import { formatSeconds } from "../core/sizes.js";

const ICON: Record<string, string> = { passed: "✓", failed: "✗", error: "!", skipped: "-" };

/** The terminal view of one result: a header, then a table of every probe check. */
export function renderResultTable(result: EvaluationResult): string {
  const lines: string[] = [];
  lines.push(`${result.task.id}: ${result.verdict.toUpperCase()} — ${renderTitle(result)}`);
  const o = result.official;
  if (o) {
    const c = o.counts;
    lines.push(`official tests: ${c.passed} passed, ${c.failed} failed, ${c.errors} errors, ${c.skipped} skipped in ${formatSeconds(o.durationS)}${o.reason ? ` (${o.reason})` : ""}`);
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
