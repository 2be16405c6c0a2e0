import Table from "cli-table3";
import type { EvaluationResult, ProbeResult } from "../core/result.js";
import { formatSeconds } from "../core/sizes.js";
import type { ReplayCommit } from "./gate-replay-history.js";

/** One replayed PR: the commit, what of it the gate watches, and its result (or why there is none). */
export interface ReplayRow {
  commit: ReplayCommit;
  /** The changed paths the gate watches. */
  watched: string[];
  /** "inject NAME" for a regression committed on top of the PR; absent for the PR itself. */
  injected?: string;
  /** The result JSON's path. */
  file: string;
  result: EvaluationResult | null;
  /** Why there is no result: the evaluation threw, or it was not run (`--table-only`, stopped early). */
  problem?: string;
  /** The result came from an earlier run (resumed). */
  kept?: boolean;
}

const MESSAGE = 160;

function shorten(text: string, n: number): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}

const MiB = (b: number) => `${(b / 2 ** 20).toFixed(b < 10 * 2 ** 20 ? 1 : 0)} MiB`;

/** A measured value as people read it: bytes in MiB, others with up to 3 decimals. */
function figure(name: string, v: number): string {
  if (/bytes/.test(name) && Math.abs(v) >= 2 ** 20) return MiB(v);
  return Number.isInteger(v) ? String(v) : v.toFixed(3).replace(/\.?0+$/, "");
}

/**
 * The figures of one probe check, from what it measured, whatever the suite: each `head_X` with a
 * `base_X` beside it as "X head/base", and each ratio as "×r". None for a check that measured neither.
 */
export function measuredFigures(p: Pick<ProbeResult, "id" | "measured">): string[] {
  const m = p.measured ?? {};
  const out: string[] = [];
  for (const [k, v] of Object.entries(m)) {
    if (typeof v !== "number") continue;
    const name = k.slice("head_".length);
    const base = m[`base_${name}`];
    if (k.startsWith("head_") && typeof base === "number") out.push(`${p.id} ${name.replace(/_/g, " ")} ${figure(name, v)}/${figure(name, base)}`);
    else if (k === "ratio" || k.endsWith("_ratio")) out.push(`${p.id} ×${v.toFixed(2)}`);
  }
  return out;
}

/** The key numbers of one result, generic: official tests at the head (and the base), probe checks, measured figures, time. */
export function keyNumbers(r: EvaluationResult): string[] {
  const nums: string[] = [];
  const o = r.official;
  if (o) nums.push(`tests ${o.counts.passed}/${o.counts.total}${o.base ? ` (base ${o.base.counts.passed}/${o.base.counts.total})` : ""}`);
  if (r.probes.length) nums.push(`checks ${r.probes.filter((p) => p.status === "passed").length}/${r.probes.length} passed`);
  nums.push(...r.probes.flatMap(measuredFigures).slice(0, 6));
  nums.push(`${formatSeconds(r.durations.totalS)} (official ${formatSeconds(r.durations.officialS)}, probes ${formatSeconds(r.durations.probesS)})`);
  if (r.gpuSeconds > 0) nums.push(`${r.gpuSeconds.toFixed(0)} GPU·s`);
  return nums;
}

/** What failed, one entry each: failing official tests, failed or errored probe checks, and the reason when not resolved. */
export function failedChecks(r: EvaluationResult): string[] {
  const out: string[] = [];
  for (const f of r.official?.failing.slice(0, 5) ?? []) out.push(`test ${f.classname ? `${f.classname}.` : ""}${f.name}: ${shorten(f.message, MESSAGE)}`);
  if ((r.official?.failing.length ?? 0) > 5) out.push(`… ${(r.official?.failing.length ?? 0) - 5} more failing tests`);
  for (const p of r.probes) if (p.status === "failed" || p.status === "error") out.push(`${p.id} (${p.category}${p.status === "error" ? ", error" : ""}): ${shorten(p.message, MESSAGE)}`);
  if (r.verdict !== "resolved" && !out.length) out.push(shorten(r.reason, MESSAGE * 2));
  return out;
}

/** "#1234 5689fd799 (base 97eac9048)", with "inject NAME on" in front of an injected regression. */
function prCell(row: ReplayRow, md: boolean): string {
  const code = (s: string) => (md ? `\`${s}\`` : s);
  const c = row.commit;
  return `${row.injected ? `${row.injected} on ` : ""}${c.pr !== null ? `#${c.pr} ` : ""}${code(c.sha.slice(0, 9))} (${code(c.parent.slice(0, 9))})`;
}

function pathsCell(row: ReplayRow): string {
  const shown = row.watched.slice(0, 6).join(", ") + (row.watched.length > 6 ? `, … ${row.watched.length - 6} more` : "");
  return `${shown || "–"} (${row.watched.length}/${row.commit.changed.length})`;
}

function cells(row: ReplayRow): { verdict: string; numbers: string; failed: string[] } {
  if (!row.result) return { verdict: "not judged", numbers: "", failed: row.problem ? [shorten(row.problem, MESSAGE * 2)] : [] };
  return { verdict: row.result.verdict, numbers: keyNumbers(row.result).join("; "), failed: failedChecks(row.result) };
}

const mdEscape = (t: string) => t.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** The markdown table of a replay; the explanation column is for a person, from the PR's own description and code. */
export function renderReplayMarkdown(rows: readonly ReplayRow[]): string {
  const lines = [
    "| # | PR / sha (base) | title | changed paths (watched / all) | verdict | key numbers | failed checks | explanation |",
    "|---|---|---|---|---|---|---|---|",
  ];
  rows.forEach((row, i) => {
    const c = cells(row);
    lines.push(`| ${i + 1} | ${prCell(row, true)} | ${mdEscape(shorten(row.commit.title, 90))} | ${mdEscape(pathsCell(row))} | **${c.verdict}** | ${mdEscape(c.numbers)} | ${c.failed.map(mdEscape).join("<br>") || "–"} |  |`);
  });
  return `${lines.join("\n")}\n`;
}

/** The same rows for the terminal. */
export function renderReplayTable(rows: readonly ReplayRow[]): string {
  const t = new Table({
    head: ["#", "PR / sha (base)", "title", "watched / all paths", "verdict", "key numbers", "failed checks"],
    colWidths: [4, 26, 30, 26, 16, 36, 50],
    wordWrap: true,
    style: { head: [], border: [] },
  });
  rows.forEach((row, i) => {
    const c = cells(row);
    t.push([String(i + 1), prCell(row, false), shorten(row.commit.title, 80), pathsCell(row), c.verdict, c.numbers, c.failed.join("\n") || "–"]);
  });
  return t.toString();
}

/** One line for the end of a PR's evaluation on stderr. */
export function doneLine(row: ReplayRow): string {
  const c = cells(row);
  return `${c.verdict}${row.result ? ` in ${formatSeconds(row.result.durations.totalS)}` : ""}${c.failed.length ? `: ${c.failed.slice(0, 3).join("; ")}` : ""}`;
}
