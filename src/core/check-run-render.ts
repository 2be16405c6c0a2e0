import { CATEGORIES, type Category } from "./probe-check.js";
import type { EvaluationResult, ProbeResult, Verdict } from "./result.js";
import { renderTimeline } from "./job-timeline.js";
import { formatBytes, formatSeconds } from "./sizes.js";

/** GitHub's limits on a check run's output (Checks API). */
export const SUMMARY_LIMIT = 65535;
export const ANNOTATIONS_PER_REQUEST = 50;
const ANNOTATION_MESSAGE_LIMIT = 4000;
const TABLE_CELL_LIMIT = 300;

/** The conclusions a result maps to, and those the app uses for runs that never got one. */
export type CheckConclusion = "success" | "failure" | "neutral" | "cancelled" | "timed_out" | "action_required";

/** One annotation as the Checks API takes it. */
export interface CheckAnnotation {
  path: string;
  start_line: number;
  end_line: number;
  annotation_level: "notice" | "warning" | "failure";
  title: string;
  message: string;
}

export interface CheckRunOutput {
  conclusion: CheckConclusion;
  title: string;
  summary: string;
  annotations: CheckAnnotation[];
}

const VERDICT_ICON: Record<Verdict, string> = {
  resolved: "✅",
  "official-failed": "❌",
  "probe-rejected": "🚩",
  error: "⚠️",
};

const VERDICT_LABEL: Record<Verdict, string> = {
  resolved: "Resolved",
  "official-failed": "Official tests failed",
  "probe-rejected": "Rejected by hidden probes",
  error: "Evaluation error",
};

/** resolved → success; a rejection → failure; a harness error → neutral (the submission was not judged). */
export function conclusionFor(verdict: Verdict): "success" | "failure" | "neutral" {
  if (verdict === "resolved") return "success";
  if (verdict === "error") return "neutral";
  return "failure";
}

/** The check run's title, e.g. "Passes official tests, fails 3 of 17 hidden probes". */
export function renderTitle(result: EvaluationResult): string {
  const probes = result.probes.length;
  const failed = result.probes.filter((p) => p.status === "failed").length;
  const o = result.official;
  switch (result.verdict) {
    case "resolved":
      return `Passes official tests and all ${probes} hidden probes`;
    case "probe-rejected":
      return `Passes official tests, fails ${failed} of ${probes} hidden probes`;
    case "official-failed": {
      if (o?.limit) return `Official tests stopped: ${o.limit} limit exceeded`;
      const bad = (o?.counts.failed ?? 0) + (o?.counts.errors ?? 0);
      return bad > 0 ? `Fails ${bad} of ${o?.counts.total ?? 0} official tests` : `Official tests did not pass: ${o?.reason ?? "unknown"}`;
    }
    case "error":
      return truncate(`Evaluation error: ${result.error?.message ?? result.reason}`, 200);
  }
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Makes free text safe inside one markdown table cell. */
export function cell(text: string, max = TABLE_CELL_LIMIT): string {
  return truncate(text.replace(/\r?\n/g, " ").replace(/\|/g, "\\|"), max);
}

function where(p: { location?: { path: string; line?: number | undefined } | null }): string {
  if (!p.location) return "";
  return `\`${p.location.path}${p.location.line ? `:${p.location.line}` : ""}\``;
}

/** Counts of checks per category and status, in the fixed category order. */
export function categoryTable(probes: readonly ProbeResult[]): Array<{ category: Category; passed: number; failed: number; error: number; skipped: number }> {
  return CATEGORIES.map((category) => {
    const of = probes.filter((p) => p.category === category);
    const n = (s: string) => of.filter((p) => p.status === s).length;
    return { category, passed: n("passed"), failed: n("failed"), error: n("error"), skipped: n("skipped") };
  }).filter((r) => r.passed + r.failed + r.error + r.skipped > 0);
}

/**
 * Peak memory measured outside the submission's processes: the official run's host memory (its
 * cgroup, else sampled RSS) and each phase's GPU memory (nvidia-smi). Null when none was measured.
 */
export function renderMemoryOfRecord(result: EvaluationResult): string | null {
  const parts: string[] = [];
  const o = result.official;
  if (o?.peakMemoryBytes != null) parts.push(`host ${formatBytes(o.peakMemoryBytes)} in official tests (${o.memorySource === "cgroup" ? "cgroup peak" : "sampled RSS"})`);
  const g = result.gpuMemory;
  if (g) {
    const phases = [g.official && `${formatBytes(g.official.peakBytes)} in official tests`, g.probes && `${formatBytes(g.probes.peakBytes)} in probes`].filter(Boolean);
    parts.push(`GPU ${phases.join(", ")} (nvidia-smi, GPU ${g.gpus.join(",")})`);
  }
  return parts.length ? parts.join(" · ") : null;
}

function officialLine(result: EvaluationResult): string {
  const o = result.official;
  if (!o) return "not run";
  const c = o.counts;
  const icon = o.passed ? "✅" : "❌";
  const parts = [`${c.passed} passed`];
  if (c.failed) parts.push(`${c.failed} failed`);
  if (c.errors) parts.push(`${c.errors} errors`);
  if (c.skipped) parts.push(`${c.skipped} skipped`);
  const why = !o.passed && o.reason ? ` — ${o.reason}` : "";
  return `${icon} ${parts.join(", ")} (${formatSeconds(o.durationS)})${why}`;
}

/**
 * How much of the hidden probes a check run shows. `full`: each failed check's id, category,
 * location and message. `categories`: counts per category only, so an agent that pushes again and
 * again cannot read off what a check looks for; maintainers read the full messages in the
 * evaluator run's job summary and in the store.
 */
export type ProbeDetail = "full" | "categories";

/** The note that replaces the failed checks' rows when only categories are shown. */
export const CATEGORIES_ONLY_NOTE =
  "> 🔒 Hidden-probe details are withheld from agent-authored pull requests (`feedback.agentDetail: categories` in .github/probegate.yml): only the category of each failed check is shown. Maintainers see the full messages in the evaluator run.";

/**
 * The markdown summary: verdict, facts table, probes by category, then the failing rows.
 * Rows are dropped from the end, with a note, so the summary never exceeds GitHub's limit.
 */
export function renderSummary(result: EvaluationResult, limit = SUMMARY_LIMIT, detail: ProbeDetail = "full"): string {
  const head: string[] = [];
  head.push(`### ${VERDICT_ICON[result.verdict]} ${VERDICT_LABEL[result.verdict]} — ${result.reason}`, "");
  const sub = result.submission;
  const subject = sub.repo ? `${sub.repo}@${(sub.sha ?? sub.ref ?? "").slice(0, 12)}` : sub.source;
  head.push("| | |", "|---|---|");
  head.push(`| Task | \`${result.task.id}\` — ${cell(result.task.title)} |`);
  head.push(`| Submission | \`${cell(subject)}\` |`);
  head.push(`| Official tests | ${cell(officialLine(result))} |`);
  const tally = categoryTable(result.probes).reduce(
    (a, r) => ({ p: a.p + r.passed, f: a.f + r.failed, e: a.e + r.error, s: a.s + r.skipped }),
    { p: 0, f: 0, e: 0, s: 0 },
  );
  const probeLine = result.probes.length
    ? [`${tally.p} passed`, tally.f && `${tally.f} failed`, tally.e && `${tally.e} error`, tally.s && `${tally.s} skipped`].filter(Boolean).join(" · ")
    : "not run";
  head.push(`| Hidden probes | ${probeLine} |`);
  const source = result.probeSetVersion;
  const commits = [source?.evaluatorCommit && `evaluator \`${source.evaluatorCommit.slice(0, 12)}\``, source?.probesCommit && `probes \`${source.probesCommit.slice(0, 12)}\``].filter(Boolean);
  head.push(`| Probe set | \`${result.task.probeSet.slice(0, 19)}\`${commits.length ? ` (${commits.join(", ")})` : ""} |`);
  const env = result.environment;
  const gpu = env.gpus.length ? `${env.gpus.length}× ${env.gpus[0]?.model}` : "CPU";
  head.push(`| Ran on | ${cell(`${gpu}, ${env.backend} × ${env.worldSize} ranks, torch ${env.torch ?? "?"}${env.sandboxed ? "" : ", unsandboxed"}`)} |`);
  head.push(`| Time | ${formatSeconds(result.durations.totalS)} (${result.gpuSeconds.toFixed(1)} GPU·s) |`);
  const memory = renderMemoryOfRecord(result);
  if (memory) head.push(`| Memory of record | ${memory} |`);
  head.push("");

  const cats = categoryTable(result.probes);
  if (cats.length) {
    head.push("#### Hidden probes by category", "", "| Category | Passed | Failed | Error | Skipped |", "|---|---:|---:|---:|---:|");
    for (const r of cats) head.push(`| ${r.category} | ${r.passed} | ${r.failed} | ${r.error} | ${r.skipped} |`);
    head.push("");
  }

  const rows: string[] = [];
  const bad = result.probes.filter((p) => p.status === "failed" || p.status === "error");
  if (bad.length && detail === "categories") rows.push(CATEGORIES_ONLY_NOTE, "");
  else if (bad.length) {
    rows.push("#### Probes that did not pass", "", "| Probe | Category | Status | Where | What was found |", "|---|---|---|---|---|");
    for (const p of bad) rows.push(`| \`${p.id}\` | ${p.category} | ${p.status} | ${where(p)} | ${cell(p.message)} |`);
    rows.push("");
  }
  const failing = result.official?.failing ?? [];
  if (failing.length) {
    rows.push("#### Official tests that failed", "", "| Test | Where | Message |", "|---|---|---|");
    for (const t of failing) {
      const at = t.file ? `\`${t.file}${t.line ? `:${t.line}` : ""}\`` : "";
      rows.push(`| \`${cell(t.classname ? `${t.classname}::${t.name}` : t.name, 120)}\` | ${at} | ${cell(t.message)} |`);
    }
    rows.push("");
  }
  const atBase = result.official?.failingAtBase ?? [];
  if (atBase.length) {
    rows.push("#### Failing at the base too (not this PR's)", "", "| Test | Message at the head |", "|---|---|");
    for (const t of atBase) rows.push(`| \`${cell(t.classname ? `${t.classname}::${t.name}` : t.name, 120)}\` | ${cell(t.message)} |`);
    rows.push("");
  }
  rows.push(...renderTimeline(result.jobs ?? []));
  if (result.workspaceResets.length) {
    rows.push("#### Changes to the judge that were undone", "", "| Path | Action | Why |", "|---|---|---|");
    for (const r of result.workspaceResets) rows.push(`| \`${cell(r.path)}\` | ${r.action} | ${cell(r.why)} |`);
    rows.push("");
  }
  return fitToLimit(head.join("\n"), rows, limit);
}

function fitToLimit(head: string, rows: string[], limit: number): string {
  const full = [head, ...rows].join("\n");
  if (full.length <= limit) return full;
  const kept: string[] = [];
  let size = head.length;
  const noteRoom = 200;
  for (const row of rows) {
    if (size + row.length + 1 + noteRoom > limit) break;
    kept.push(row);
    size += row.length + 1;
  }
  const dropped = rows.length - kept.length;
  const note = `\n> ✂️ ${dropped} more rows left out: a check-run summary holds at most ${limit.toLocaleString("en-US")} characters. The full result is in the evaluation's result JSON.`;
  return [head, ...kept].join("\n").slice(0, limit - note.length) + note;
}

/**
 * Annotations on the submission's code: failed probes (failure), probe errors (warning), failing
 * official tests (failure), and undone edits to the judge (notice). Checks without a location
 * appear only in the summary, since GitHub requires a path.
 */
export function renderAnnotations(result: EvaluationResult, detail: ProbeDetail = "full"): CheckAnnotation[] {
  const out: CheckAnnotation[] = [];
  for (const p of detail === "full" ? result.probes : []) {
    if (!p.location || (p.status !== "failed" && p.status !== "error")) continue;
    const line = p.location.line ?? 1;
    out.push({
      path: p.location.path,
      start_line: line,
      end_line: line,
      annotation_level: p.status === "failed" ? "failure" : "warning",
      title: truncate(`${p.category} probe ${p.status}: ${p.id}`, 255),
      message: truncate(p.message || `hidden ${p.category} probe ${p.status}`, ANNOTATION_MESSAGE_LIMIT),
    });
  }
  for (const t of result.official?.failing ?? []) {
    if (!t.file) continue;
    const line = t.line ?? 1;
    out.push({
      path: t.file,
      start_line: line,
      end_line: line,
      annotation_level: "failure",
      title: truncate(`official test ${t.kind}: ${t.name}`, 255),
      message: truncate(t.message || "the test failed", ANNOTATION_MESSAGE_LIMIT),
    });
  }
  for (const r of result.workspaceResets) {
    out.push({ path: r.path, start_line: 1, end_line: 1, annotation_level: "notice", title: `judge file ${r.action}`, message: r.why });
  }
  return out;
}

/** Splits annotations into the batches the Checks API accepts per request. */
export function batchAnnotations<T>(annotations: readonly T[], size = ANNOTATIONS_PER_REQUEST): T[][] {
  if (size < 1) throw new RangeError("batch size must be at least 1");
  const batches: T[][] = [];
  for (let i = 0; i < annotations.length; i += size) batches.push(annotations.slice(i, i + size));
  return batches;
}

/**
 * Everything a check run shows, from one result: the CLI, the Action and the app all call this.
 * `detail: categories` leaves out the hidden checks' ids, locations and messages.
 */
export function renderCheckRun(result: EvaluationResult, detail: ProbeDetail = "full"): CheckRunOutput {
  return {
    conclusion: conclusionFor(result.verdict),
    title: renderTitle(result),
    summary: renderSummary(result, SUMMARY_LIMIT, detail),
    annotations: renderAnnotations(result, detail),
  };
}
