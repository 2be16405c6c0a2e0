import { CATEGORIES } from "../probe-check.js";
import { describeBasis, type AgentScore, type Scorecard } from "./scorecard.js";
import type { SkippedFile } from "./scorecard-results.js";
import { formatRate, MIN_RATED } from "../wilson.js";

/** "1", "=1" (shares the tier with others), or "–" (not ranked). */
export function rankLabel(a: AgentScore): string {
  if (a.rank === null) return "–";
  return a.tiedWith.length ? `=${a.rank}` : String(a.rank);
}

/** Seconds for people: "42 s", "3.5 min", "1.2 h"; "≈" when the median is bucketed; "–" when unknown. */
export function formatDuration(s: number | null, exact: boolean): string {
  if (s === null) return "–";
  const approx = exact ? "" : "≈";
  if (s < 90) return `${approx}${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  if (s < 5400) return `${approx}${(s / 60).toFixed(1)} min`;
  return `${approx}${(s / 3600).toFixed(1)} h`;
}

const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** The failed categories of a slice: "memory 2, traffic 1", or "–". */
export function categoryList(a: AgentScore): string {
  return CATEGORIES.filter((c) => a.figures.failedCategories[c] > 0).map((c) => `${c} ${a.figures.failedCategories[c]}`).join(", ") || "–";
}

/** The columns of the ranking, as text cells (shared by markdown and the terminal table). */
export function rankingCells(a: AgentScore): string[] {
  const f = a.figures;
  return [
    rankLabel(a),
    a.agent,
    String(f.evaluations),
    formatRate(f.resolved, { compact: true }),
    formatRate(f.officialPass, { compact: true }),
    formatRate(f.probeRejection, { compact: true }),
    formatRate(f.firstAttempt, { compact: true }),
    formatRate(f.bestOfN, { compact: true }),
    formatDuration(f.medianDurationS, f.medianExact),
    f.gpuMinutes.toFixed(1),
    categoryList(a),
  ];
}
export const RANKING_HEAD = ["rank", "agent", "evaluations", "resolved", "passed official", "probe rejection", "first attempt", "best of N", "median time", "GPU-min", "failed probe categories"];

/**
 * The scorecard as markdown (a job summary, a PR comment): the ranking with intervals, then the
 * resolved rate per area and per week, and any results-folder files left out.
 */
export function renderScorecardMarkdown(card: Scorecard, opts: { scope?: string; skipped?: readonly SkippedFile[] } = {}): string {
  const table = (head: string[], rows: string[][]) => [`| ${head.map(cell).join(" | ")} |`, `|${head.map((_, i) => (i < 2 ? "---" : "---:")).join("|")}|`, ...rows.map((r) => `| ${r.map(cell).join(" | ")} |`)];
  const out = [
    `**probegate scorecard**${opts.scope ? ` · ${opts.scope}` : ""} · counted: ${describeBasis(card.basis)}${card.since ? ` · groups from ${card.since.slice(0, 10)}` : ""} · ${card.total.figures.evaluations} evaluations`,
    "",
    ...table(RANKING_HEAD, [...card.agents.map(rankingCells), rankingCells(card.total).map((c, i) => (i === 1 ? `**${c}**` : c))]),
    "",
    `Rates: percentage [95% Wilson interval] k/n; under ${MIN_RATED}, the count alone. Agents whose intervals overlap share a rank (=). Probe rejection: of the submissions that passed every official test, the share a hidden probe caught.`,
  ];
  const by = (d: "area" | "week", keys: string[]) => {
    if (!keys.length) return;
    const rows = [...card.agents, card.total].map((a) => {
      const m = new Map(a.by[d].map((s) => [s.key, s.figures.resolved]));
      return [a.agent, ...keys.map((k) => (m.has(k) ? formatRate(m.get(k)!, { compact: true }) : "–"))];
    });
    out.push("", `Resolved by ${d}:`, "", ...table(["agent", ...keys], rows));
  };
  by("area", card.keys.area);
  by("week", card.keys.week.slice(-8));
  if (opts.skipped?.length) {
    out.push("", `**${opts.skipped.length} file(s) left out:**`, "", ...opts.skipped.map((s) => `- \`${s.file}\`: ${cell(s.why)}`));
  }
  return out.join("\n");
}
