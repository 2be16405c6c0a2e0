import { CATEGORIES } from "../probe-check.js";
import { chartData, CATEGORY_COLOUR, TREND_WEEKS, VERDICT_COLOUR } from "./scorecard-chart-data.js";
import { linkable, prUrl, type EvaluationLine } from "./scorecard-drilldown.js";
import { describeBasis, DIMENSIONS, NO_AGENT, type AgentScore, type Dimension, type Scorecard } from "./scorecard.js";
import { PAGE_SCRIPT } from "./scorecard-page-script.js";
import { formatRate } from "../wilson.js";
import { formatDuration, rankLabel } from "./scorecard-markdown.js";
import type { SkippedFile } from "./scorecard-results.js";

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);
}

/** JSON that is safe inside a <script> element: no "</script>", no HTML comment openers. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

/** What a page shows besides the scorecard. */
export interface PageOptions {
  /** Chart.js's browser build, inlined so the page opens from a file with no network. */
  chartJs: string;
  title: string;
  generatedAt: string;
  /** What was scored: "all repositories", "octo/gpu-lib", "results in ./results". */
  scope: string;
  /** Per agent (null: no agent), its newest counted evaluations. */
  drill: ReadonlyMap<string | null, readonly EvaluationLine[]>;
  /** Where PR links point (GitHub Enterprise: its URL). */
  serverUrl?: string;
  /** Files of a results folder that were left out, and why. */
  skipped?: readonly SkippedFile[];
}

const e = escapeHtml;
const rate = (r: Parameters<typeof formatRate>[0]) => e(formatRate(r, { compact: true }));
const drillId = (i: number) => `drill-${i}`;
const cats = (a: AgentScore) =>
  CATEGORIES.filter((c) => a.figures.failedCategories[c] > 0)
    .map((c) => `<span class="sw" style="background:${CATEGORY_COLOUR[c]}"></span>${c} ${a.figures.failedCategories[c]}`)
    .join(" ") || "–";

const RANK_HEAD = ["rank", "agent", "evaluations", "resolved", "passed official", "probe rejection", "first attempt", "best of N", "median time", "GPU-min", "failed probe categories"];

function rankingRow(a: AgentScore, i: number | null): string {
  const f = a.figures;
  const name = i === null ? `<th scope="row">${e(a.agent)}</th>` : `<th scope="row"><a class="drill-link" href="#${drillId(i)}">${e(a.agent)}</a></th>`;
  const cells = [e(rankLabel(a)), f.evaluations, rate(f.resolved), rate(f.officialPass), rate(f.probeRejection), rate(f.firstAttempt), rate(f.bestOfN), e(formatDuration(f.medianDurationS, f.medianExact)), f.gpuMinutes.toFixed(1), cats(a)];
  return `<tr${i === null ? ' class="total"' : ""}><td>${cells[0]}</td>${name}${cells.slice(1).map((c) => `<td>${c}</td>`).join("")}</tr>`;
}

function breakdown(card: Scorecard, d: Dimension): string {
  const keys = d === "week" ? card.keys.week.slice(-TREND_WEEKS) : card.keys[d];
  if (!keys.length) return "";
  const rows = [...card.agents, card.total].map((a) => {
    const by = new Map(a.by[d].map((s) => [s.key, s.figures]));
    const cells = keys.map((k) => {
      const f = by.get(k);
      return f ? `<td title="${e(`${f.evaluations} evaluations; probe rejection ${formatRate(f.probeRejection)}`)}">${rate(f.resolved)}</td>` : "<td>–</td>";
    });
    return `<tr${a === card.total ? ' class="total"' : ""}><th scope="row">${e(a.agent)}</th>${cells.join("")}</tr>`;
  });
  return `<h3>Resolved by ${d}</h3><div class="scroll"><table class="by-${d}"><thead><tr><th scope="col">agent</th>${keys.map((k) => `<th scope="col">${e(k)}</th>`).join("")}</tr></thead><tbody>${rows.join("")}</tbody></table></div>`;
}

function drillDown(a: AgentScore, i: number, lines: readonly EvaluationLine[], serverUrl: string | undefined): string {
  const rows = lines.map((l) => {
    const pr = prUrl(l, serverUrl);
    const where = l.owner && l.repo ? `${l.owner}/${l.repo}${l.pr !== null ? `#${l.pr}` : ""}` : l.file ?? "–";
    const run = linkable(l.runUrl);
    const which = [l.first ? "first" : "", l.best ? "best" : ""].filter(Boolean).join(", ");
    return `<tr><td>${e(l.finishedAt.slice(0, 16).replace("T", " "))}</td><td>${pr ? `<a href="${e(pr)}">${e(where)}</a>` : e(where)}</td><td>${e(l.task)}</td><td>${l.attempt}${which ? ` (${which})` : ""}</td><td><span class="sw" style="background:${VERDICT_COLOUR[l.verdict]}"></span>${e(l.verdict)}</td><td>${e(l.failedCategories.join(", ") || "–")}</td><td>${e(formatDuration(l.durationS, true))}</td><td>${l.headSha ? `<code>${e(l.headSha.slice(0, 7))}</code>` : "–"}</td><td>${run ? `<a href="${e(run)}">run</a>` : "–"}</td></tr>`;
  });
  const shown = lines.length < a.figures.evaluations ? `the newest ${lines.length} of ${a.figures.evaluations}` : `all ${lines.length}`;
  return `<details class="drill" id="${drillId(i)}"><summary>${e(a.agent)}: ${shown} counted evaluations</summary>
<table><thead><tr><th>finished (UTC)</th><th>pull request</th><th>task</th><th>attempt</th><th>verdict</th><th>failed probes</th><th>time</th><th>commit</th><th>run</th></tr></thead><tbody>${rows.join("")}</tbody></table></details>`;
}

const CSS = `body{font:14px/1.45 -apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;margin:2rem auto;max-width:1200px;padding:0 1rem;color:#1f2328}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2.2rem}h3{font-size:1rem;margin-top:1.4rem}
.meta{color:#59636e}.sw{display:inline-block;width:.8em;height:.8em;margin:0 .3em 0 .5em;border-radius:2px;vertical-align:-1px}
table{border-collapse:collapse;margin:.5rem 0;width:100%}th,td{border:1px solid #d1d9e0;padding:.3rem .5rem;text-align:right;white-space:nowrap}
th[scope=row],thead th:first-child,td:first-child{text-align:left}thead th{background:#f6f8fa}tr.total th,tr.total td{font-weight:600;background:#f6f8fa}
.scroll{overflow-x:auto}.chart{position:relative}.grid{display:grid;grid-template-columns:1fr 1fr;gap:2rem}@media(max-width:900px){.grid{grid-template-columns:1fr}}
details.drill{margin:.4rem 0;border:1px solid #d1d9e0;border-radius:6px;padding:.3rem .6rem}details.drill summary{cursor:pointer;font-weight:600}.warn{color:#9a6700}`;

/**
 * A self-contained HTML scorecard: the ranking with 95% intervals (agents whose intervals overlap
 * share a rank), failed probe categories stacked per agent, the probe-rejection rate per agent,
 * weekly trends, tables per repository / task / area / week, and a drill-down from each agent to
 * its newest evaluations with links to their PRs. Chart.js is inlined and the page makes no
 * request; every figure is also in a table, which reads without JavaScript. Pure.
 */
export function renderScorecardHtml(card: Scorecard, opts: PageOptions): string {
  const empty = card.agents.length === 0;
  const data = chartData(card);
  const h = (n: number) => Math.max(140, 36 * n + 70);
  const omitted = (list: string[]) => (list.length ? `<p class="meta">Not drawn (fewer than 5): ${e(list.join(", "))}.</p>` : "");
  const t = card.total.figures;
  const skipped = opts.skipped?.length
    ? `<h2 class="warn">Files left out (${opts.skipped.length})</h2><ul class="skipped">${opts.skipped.map((s) => `<li><code>${e(s.file)}</code>: ${e(s.why)}</li>`).join("")}</ul>`
    : "";
  const charts = empty
    ? "<p>No finished evaluation matches: nothing to score yet.</p>"
    : `<p>Hidden probes rejected <strong>${e(formatRate(t.probeRejection))}</strong> of the submissions that passed every official test. Resolved: ${e(formatRate(t.resolved))} of the judged; first attempt ${e(formatRate(t.firstAttempt))}, best of N ${e(formatRate(t.bestOfN))}.</p>
<h2>Ranking: resolved rate with its 95% interval</h2>
<p class="meta">Agents whose intervals overlap are not ranked apart (they share a rank, marked =). Agents with fewer than 5 judged evaluations are listed, not ranked.</p>
<div class="chart" style="height:${h(data.ranking.labels.length)}px"><canvas id="ranking" role="img" aria-label="Resolved rate per agent with 95% interval"></canvas></div>${omitted(data.ranking.omitted)}
<div class="scroll"><table id="ranking-table"><thead><tr>${RANK_HEAD.map((x) => `<th scope="col">${e(x)}</th>`).join("")}</tr></thead>
<tbody>${card.agents.map((a, i) => rankingRow(a, i)).join("")}${rankingRow(card.total, null)}</tbody></table></div>
<p class="meta">Rates: percentage [95% interval] k/n; under 5, the count alone (n&lt;5). Probe rejection: of the submissions that passed every official test, the share a hidden probe caught.</p>
<div class="grid">
<div><h2>Failed probe categories per agent</h2><p class="meta">Counted evaluations with a failed check of each category.</p><div class="chart" style="height:${h(card.agents.length)}px"><canvas id="categories" role="img" aria-label="Failed probe categories per agent"></canvas></div></div>
<div><h2>Probe-rejection rate per agent</h2><p class="meta">Of each agent's submissions that passed every official test, the share a probe rejected, with its 95% interval.</p><div class="chart" style="height:${h(data.probeRejection.labels.length)}px"><canvas id="probe-rejection" role="img" aria-label="Probe-rejection rate per agent"></canvas></div>${omitted(data.probeRejection.omitted)}</div>
</div>
<h2>Weekly trends</h2><p class="meta">Weeks start on Monday (UTC); a week's resolved rate is drawn where it has at least 5 judged evaluations.</p>
<div class="grid"><div class="chart" style="height:260px"><canvas id="trend-resolved" role="img" aria-label="Resolved rate per week"></canvas></div><div class="chart" style="height:260px"><canvas id="trend-evaluations" role="img" aria-label="Evaluations per week"></canvas></div></div>
<h2>Breakdowns</h2>${DIMENSIONS.map((d) => breakdown(card, d)).join("\n")}
<h2>Evaluations per agent</h2><p class="meta">Open an agent (or click its name in the ranking) to see its evaluations, with links to the pull requests.</p>
${card.agents.map((a, i) => drillDown(a, i, opts.drill.get(a.agent === NO_AGENT ? null : a.agent) ?? [], opts.serverUrl)).join("\n")}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(opts.title)}</title>
<style>${CSS}</style>
</head>
<body>
<h1>${e(opts.title)}</h1>
<p class="meta">${e(opts.scope)} · counted: ${e(describeBasis(card.basis))}${card.since ? ` · groups from ${e(card.since.slice(0, 10))}` : ""} · ${t.evaluations} evaluations · generated ${e(opts.generatedAt)}</p>
${skipped}
${charts}
<script type="application/json" id="scorecard-data">${scriptJson(data)}</script>
<script>${opts.chartJs.replace(/<\/script/gi, "<\\/script")}</script>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
}
