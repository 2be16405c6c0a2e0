import { CATEGORIES } from "./probe-check.js";
import { describeBasis, percent, VERDICT_ORDER, type AgentScore, type Scorecard } from "./scorecard.js";

/** Colours per verdict and per probe category, shared by the charts and the tables' swatches. */
const VERDICT_COLOUR: Record<string, string> = {
  resolved: "#2da44e",
  "probe-rejected": "#d4a72c",
  "official-failed": "#cf222e",
  error: "#8c959f",
};
const VERDICT_LABEL: Record<string, string> = {
  resolved: "resolved",
  "probe-rejected": "passed official tests, caught by probes",
  "official-failed": "failed official tests",
  error: "error (nothing judged)",
};
const CATEGORY_COLOUR: Record<string, string> = {
  structure: "#8250df",
  state: "#bf3989",
  functional: "#0969da",
  memory: "#1a7f37",
  time: "#bc4c00",
  traffic: "#57606a",
};

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);
}

/** JSON that is safe inside a <script> element: no "</script>", no HTML comment openers. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

/** What the page's script draws: plain data, no code. */
export function chartData(card: Scorecard) {
  const labels = card.agents.map((a) => a.agent);
  const share = (a: AgentScore, n: number) => (a.submissions ? (100 * n) / a.submissions : 0);
  return {
    labels,
    verdicts: VERDICT_ORDER.map((v) => ({
      label: VERDICT_LABEL[v],
      backgroundColor: VERDICT_COLOUR[v],
      data: card.agents.map((a) => Number(share(a, a.verdicts[v]).toFixed(1))),
      counts: card.agents.map((a) => a.verdicts[v]),
    })),
    caught: card.agents.map((a) => (a.caughtRate === null ? null : Number((100 * a.caughtRate).toFixed(1)))),
    categories: CATEGORIES.map((c) => ({ label: c, backgroundColor: CATEGORY_COLOUR[c], data: card.agents.map((a) => a.failedCategories[c]) })),
  };
}

function agentRow(a: AgentScore, cls = ""): string {
  const cells = [
    escapeHtml(a.agent),
    String(a.submissions),
    ...VERDICT_ORDER.map((v) => String(a.verdicts[v])),
    percent(a.resolvedRate),
    percent(a.caughtRate),
    CATEGORIES.filter((c) => a.failedCategories[c] > 0)
      .map((c) => `${c} ${a.failedCategories[c]}`)
      .join(", ") || "–",
  ];
  return `<tr${cls ? ` class="${cls}"` : ""}>${cells.map((c, i) => (i === 0 ? `<th scope="row">${c}</th>` : `<td>${c}</td>`)).join("")}</tr>`;
}

function taskTable(card: Scorecard): string {
  const head = `<tr><th scope="col">agent</th>${card.tasks.map((t) => `<th scope="col">${escapeHtml(t)}</th>`).join("")}</tr>`;
  const rows = card.agents.map((a) => {
    const cells = card.tasks.map((t) => {
      const c = a.tasks[t];
      if (!c) return "<td>–</td>";
      const n = VERDICT_ORDER.reduce((s, v) => s + c[v], 0);
      const title = VERDICT_ORDER.map((v) => `${VERDICT_LABEL[v]}: ${c[v]}`).join("; ");
      return `<td title="${escapeHtml(title)}">${c.resolved}/${n} resolved${c["probe-rejected"] ? `, ${c["probe-rejected"]} caught` : ""}</td>`;
    });
    return `<tr><th scope="row">${escapeHtml(a.agent)}</th>${cells.join("")}</tr>`;
  });
  return `<table><thead>${head}</thead><tbody>${rows.join("")}</tbody></table>`;
}

/**
 * A self-contained HTML page of one scorecard: three charts (verdict shares per agent, the share
 * of official-test passes the probes caught, failed probe categories) drawn by Chart.js, whose
 * source is inlined so the page opens from a file with no network; and the same figures as tables,
 * which read without JavaScript. Pure: the caller passes Chart.js's source and the time.
 */
export function renderScorecardHtml(card: Scorecard, opts: { chartJs: string; title: string; generatedAt: string; scope: string }): string {
  const legend = VERDICT_ORDER.map((v) => `<span class="sw" style="background:${VERDICT_COLOUR[v]}"></span>${VERDICT_LABEL[v]}`).join(" ");
  const head = ["agent", "submissions", ...VERDICT_ORDER.map((v) => VERDICT_LABEL[v] as string), "resolved rate", "caught rate", "failed probe categories"];
  const height = Math.max(160, 44 * card.agents.length + 80);
  const empty = card.agents.length === 0;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(opts.title)}</title>
<style>
body{font:14px/1.45 -apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#1f2328}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem}
.meta{color:#59636e}.sw{display:inline-block;width:.8em;height:.8em;margin:0 .3em 0 .8em;border-radius:2px;vertical-align:-1px}
table{border-collapse:collapse;margin:.5rem 0;width:100%}th,td{border:1px solid #d1d9e0;padding:.35rem .6rem;text-align:right}
th[scope=row],thead th:first-child{text-align:left}thead th{background:#f6f8fa}tr.total th,tr.total td{font-weight:600;background:#f6f8fa}
.chart{position:relative;height:${height}px}.grid{display:grid;grid-template-columns:1fr 1fr;gap:2rem}@media(max-width:800px){.grid{grid-template-columns:1fr}}
</style>
</head>
<body>
<h1>${escapeHtml(opts.title)}</h1>
<p class="meta">${escapeHtml(opts.scope)} · counted: ${escapeHtml(describeBasis(card.basis))} · ${card.total.submissions} submissions · generated ${escapeHtml(opts.generatedAt)}</p>
${
  empty
    ? "<p>No finished evaluation matches: nothing to score yet.</p>"
    : `<p><strong>${percent(card.total.caughtRate)}</strong> of the submissions that passed every official test were rejected by hidden probes; ${percent(card.total.resolvedRate)} of the judged submissions were resolved.</p>
<h2>Verdicts per agent</h2>
<p class="meta">${legend}</p>
<div class="chart"><canvas id="verdicts" role="img" aria-label="Share of each verdict per agent"></canvas></div>
<div class="grid">
<div><h2>Caught by hidden probes</h2><p class="meta">Of each agent's submissions that passed every official test, the share a probe rejected.</p><div class="chart"><canvas id="caught" role="img" aria-label="Share caught by probes per agent"></canvas></div></div>
<div><h2>Failed probe categories</h2><p class="meta">Submissions with a failed check of each category.</p><div class="chart"><canvas id="categories" role="img" aria-label="Failed probe categories per agent"></canvas></div></div>
</div>`
}
<h2>Per agent</h2>
<table><thead><tr>${head.map((h) => `<th scope="col">${escapeHtml(h)}</th>`).join("")}</tr></thead>
<tbody>${card.agents.map((a) => agentRow(a)).join("")}${agentRow(card.total, "total")}</tbody></table>
${empty ? "" : `<h2>Per agent and task</h2>${taskTable(card)}`}
<script type="application/json" id="scorecard-data">${scriptJson(chartData(card))}</script>
<script>${opts.chartJs.replace(/<\/script/gi, "<\\/script")}</script>
<script>
(function () {
  if (typeof Chart === "undefined" || !document.getElementById("verdicts")) return;
  var d = JSON.parse(document.getElementById("scorecard-data").textContent);
  var pct = { x: { stacked: true, max: 100, ticks: { callback: function (v) { return v + "%"; } } }, y: { stacked: true } };
  new Chart(document.getElementById("verdicts"), {
    type: "bar",
    data: { labels: d.labels, datasets: d.verdicts },
    options: { indexAxis: "y", maintainAspectRatio: false, animation: false, scales: pct,
      plugins: { legend: { display: false }, tooltip: { callbacks: { label: function (c) {
        return c.dataset.label + ": " + c.dataset.counts[c.dataIndex] + " (" + c.parsed.x + "%)"; } } } } }
  });
  new Chart(document.getElementById("caught"), {
    type: "bar",
    data: { labels: d.labels, datasets: [{ label: "caught by probes", data: d.caught, backgroundColor: "#d4a72c" }] },
    options: { indexAxis: "y", maintainAspectRatio: false, animation: false, plugins: { legend: { display: false } },
      scales: { x: { min: 0, max: 100, ticks: { callback: function (v) { return v + "%"; } } } } }
  });
  new Chart(document.getElementById("categories"), {
    type: "bar",
    data: { labels: d.labels, datasets: d.categories },
    options: { indexAxis: "y", maintainAspectRatio: false, animation: false, scales: { x: { stacked: true, ticks: { precision: 0 } }, y: { stacked: true } } }
  });
})();
</script>
</body>
</html>
`;
}
