export const id = 267;
export const ids = [267];
export const modules = {

/***/ 7267:
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {


// EXPORTS
__webpack_require__.d(__webpack_exports__, {
  scorecardCommand: () => (/* binding */ scorecardCommand)
});

// EXTERNAL MODULE: external "node:fs"
var external_node_fs_ = __webpack_require__(3024);
// EXTERNAL MODULE: external "node:path"
var external_node_path_ = __webpack_require__(6760);
// EXTERNAL MODULE: ./node_modules/cli-table3/index.js
var cli_table3 = __webpack_require__(5832);
var cli_table3_default = /*#__PURE__*/__webpack_require__.n(cli_table3);
// EXTERNAL MODULE: ./src/core/probe-check.ts
var probe_check = __webpack_require__(6448);
;// CONCATENATED MODULE: ./src/core/scorecard.ts

/** The verdicts in the order a scorecard shows them: best first. */
const VERDICT_ORDER = ["resolved", "probe-rejected", "official-failed", "error"];
const BASES = ["first-attempt", "best-of-n", "all"];
/**
 * A scorecard filter from text (CLI flags, a dashboard URL's query). On bad input, the field
 * (`basis`, `repo`, `since`) and what was wrong with its value. Pure.
 */
function parseScorecardFilter(input) {
    const basis = input.basis ?? "first-attempt";
    if (!BASES.includes(basis))
        return { ok: false, field: "basis", message: `'${basis}': expected ${BASES.slice(0, -1).join(", ")} or ${BASES.at(-1)}` };
    const filter = { basis: basis };
    if (input.repo) {
        const m = /^([A-Za-z0-9_.-]+)(?:\/([A-Za-z0-9_.-]+))?$/.exec(input.repo);
        if (!m)
            return { ok: false, field: "repo", message: `'${input.repo}': expected OWNER or OWNER/NAME` };
        filter.owner = m[1];
        if (m[2])
            filter.repo = m[2];
    }
    if (input.since) {
        const d = /^\d{4}-\d{2}-\d{2}(T[\d:.]+Z?)?$/.test(input.since) ? new Date(input.since) : new Date(NaN);
        if (Number.isNaN(d.getTime()))
            return { ok: false, field: "since", message: `'${input.since}': expected a date like 2026-11-01 or 2026-11-01T12:00:00Z` };
        filter.since = d;
    }
    return { ok: true, filter };
}
/** How a scorecard names the attempts no agent was detected on. */
const NO_AGENT = "(no agent detected)";
const zeroVerdicts = () => ({ resolved: 0, "probe-rejected": 0, "official-failed": 0, error: 0 });
const zeroCategories = () => Object.fromEntries(probe_check/* CATEGORIES */.R6.map((c) => [c, 0]));
function score(agent, attempts) {
    const verdicts = zeroVerdicts();
    const failedCategories = zeroCategories();
    const tasks = {};
    for (const a of attempts) {
        verdicts[a.verdict] += 1;
        (tasks[a.task] ??= zeroVerdicts())[a.verdict] += 1;
        for (const c of new Set(a.failedCategories))
            failedCategories[c] += 1;
    }
    const judged = attempts.length - verdicts.error;
    const passedOfficial = verdicts.resolved + verdicts["probe-rejected"];
    return {
        agent,
        submissions: attempts.length,
        verdicts,
        resolvedRate: judged > 0 ? verdicts.resolved / judged : null,
        passedOfficial,
        caughtRate: passedOfficial > 0 ? verdicts["probe-rejected"] / passedOfficial : null,
        failedCategories,
        tasks,
    };
}
/** Aggregates counted attempts into one scorecard: per agent, and everyone together. Pure. */
function buildScorecard(attempts, basis) {
    const byAgent = new Map();
    for (const a of attempts) {
        const name = a.agent ?? NO_AGENT;
        const list = byAgent.get(name) ?? [];
        list.push(a);
        byAgent.set(name, list);
    }
    const agents = [...byAgent].map(([name, list]) => score(name, list));
    agents.sort((a, b) => Number(a.agent === NO_AGENT) - Number(b.agent === NO_AGENT) ||
        (b.resolvedRate ?? -1) - (a.resolvedRate ?? -1) ||
        b.submissions - a.submissions ||
        a.agent.localeCompare(b.agent));
    return { basis, agents, total: score("all agents", attempts), tasks: [...new Set(attempts.map((a) => a.task))].sort() };
}
/** A rate as a whole percentage ("–" when there is nothing to divide). */
function percent(rate) {
    return rate === null ? "–" : `${Math.round(rate * 100)}%`;
}
const BASIS_WORDS = {
    "first-attempt": "first attempt per PR and task (what the agent delivered unaided)",
    "best-of-n": "best attempt per PR and task (after reruns and pushes)",
    all: "every finished attempt",
};
/** What a scorecard counted, in words. */
function describeBasis(basis) {
    return BASIS_WORDS[basis];
}
/** The scorecard as a markdown table, one row per agent and a total row. */
function renderScorecardMarkdown(card) {
    const head = ["agent", "submissions", "resolved", "caught by probes", "official failed", "error", "resolved rate", "caught rate", "failed categories"];
    const row = (s, bold = false) => {
        const cats = probe_check/* CATEGORIES */.R6.filter((c) => s.failedCategories[c] > 0)
            .map((c) => `${c} ${s.failedCategories[c]}`)
            .join(", ");
        const cells = [s.agent, s.submissions, s.verdicts.resolved, s.verdicts["probe-rejected"], s.verdicts["official-failed"], s.verdicts.error, percent(s.resolvedRate), percent(s.caughtRate), cats || "–"].map(String);
        return `| ${(bold ? cells.map((c) => `**${c.replace(/\|/g, "\\|")}**`) : cells.map((c) => c.replace(/\|/g, "\\|"))).join(" | ")} |`;
    };
    return [
        `Counted: ${describeBasis(card.basis)}. "Caught rate": of the submissions that passed every official test, the share the hidden probes rejected.`,
        "",
        `| ${head.join(" | ")} |`,
        `|---|${head.slice(1).map(() => "---:").join("|")}|`,
        ...card.agents.map((a) => row(a)),
        row(card.total, true),
    ].join("\n");
}

// EXTERNAL MODULE: ./src/engine/errors.ts
var errors = __webpack_require__(7679);
// EXTERNAL MODULE: ./node_modules/better-sqlite3/lib/index.js
var lib = __webpack_require__(4918);
var lib_default = /*#__PURE__*/__webpack_require__.n(lib);
;// CONCATENATED MODULE: ./src/store/migrations.ts
const MIGRATIONS = [
    {
        version: 1,
        name: "evaluations, deliveries, reruns, attempt results",
        sql: `
      CREATE TABLE evaluations (
        key TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        repo TEXT NOT NULL,
        pr INTEGER,
        head_sha TEXT NOT NULL,
        task TEXT NOT NULL,
        probe_set TEXT NOT NULL,
        agent TEXT,
        state TEXT NOT NULL CHECK (state IN ('queued','dispatched','running','completed','error','superseded','timed-out')),
        attempt INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1),
        check_run_id INTEGER,
        workflow_run_id INTEGER,
        verdict TEXT CHECK (verdict IS NULL OR verdict IN ('resolved','official-failed','probe-rejected','error')),
        error TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        attempt_started_at INTEGER NOT NULL,
        version INTEGER NOT NULL DEFAULT 0
      ) STRICT;
      CREATE INDEX evaluations_pending ON evaluations (state, attempt_started_at)
        WHERE state IN ('queued','dispatched','running');
      CREATE INDEX evaluations_pr ON evaluations (owner, repo, pr);
      CREATE INDEX evaluations_workflow_run ON evaluations (workflow_run_id) WHERE workflow_run_id IS NOT NULL;

      CREATE TABLE attempt_results (
        evaluation_key TEXT NOT NULL REFERENCES evaluations (key),
        attempt INTEGER NOT NULL,
        verdict TEXT NOT NULL CHECK (verdict IN ('resolved','official-failed','probe-rejected','error')),
        finished_at INTEGER NOT NULL,
        PRIMARY KEY (evaluation_key, attempt)
      ) STRICT;

      CREATE TABLE deliveries (
        id TEXT PRIMARY KEY,
        event TEXT NOT NULL,
        received_at INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE delivery_evaluations (
        delivery_id TEXT NOT NULL REFERENCES deliveries (id),
        evaluation_key TEXT NOT NULL REFERENCES evaluations (key),
        PRIMARY KEY (delivery_id, evaluation_key)
      ) STRICT;
      CREATE INDEX delivery_evaluations_key ON delivery_evaluations (evaluation_key);

      CREATE TABLE rerun_attempts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        owner TEXT NOT NULL,
        repo TEXT NOT NULL,
        pr INTEGER NOT NULL,
        task TEXT,
        requested_by TEXT NOT NULL,
        source TEXT NOT NULL CHECK (source IN ('comment','check-run','retry')),
        accepted INTEGER NOT NULL CHECK (accepted IN (0, 1)),
        reason TEXT,
        at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX rerun_attempts_pr ON rerun_attempts (owner, repo, pr, at);
      CREATE TABLE rerun_evaluations (
        rerun_id INTEGER NOT NULL REFERENCES rerun_attempts (id),
        evaluation_key TEXT NOT NULL REFERENCES evaluations (key),
        PRIMARY KEY (rerun_id, evaluation_key)
      ) STRICT;
    `,
    },
    {
        version: 2,
        name: "app dispatch context and probe failures",
        sql: `
      ALTER TABLE evaluations ADD COLUMN installation_id INTEGER;
      ALTER TABLE evaluations ADD COLUMN evaluator_repo TEXT;
      ALTER TABLE evaluations ADD COLUMN evaluator_workflow TEXT;
      ALTER TABLE evaluations ADD COLUMN evaluator_ref TEXT;
      ALTER TABLE evaluations ADD COLUMN deadline_s INTEGER;
      ALTER TABLE evaluations ADD COLUMN run_url TEXT;

      CREATE TABLE probe_failures (
        evaluation_key TEXT NOT NULL REFERENCES evaluations (key),
        attempt INTEGER NOT NULL,
        probe_id TEXT NOT NULL,
        category TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('failed','error')),
        message TEXT NOT NULL,
        PRIMARY KEY (evaluation_key, attempt, probe_id)
      ) STRICT;
    `,
    },
    {
        version: 3,
        name: "cancelled evaluations, dispatch claims, delivery age index",
        rebuildsTables: true,
        sql: `
      CREATE TABLE evaluations_v3 (
        key TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        repo TEXT NOT NULL,
        pr INTEGER,
        head_sha TEXT NOT NULL,
        task TEXT NOT NULL,
        probe_set TEXT NOT NULL,
        agent TEXT,
        state TEXT NOT NULL CHECK (state IN ('queued','dispatched','running','completed','error','superseded','cancelled','timed-out')),
        attempt INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1),
        check_run_id INTEGER,
        workflow_run_id INTEGER,
        verdict TEXT CHECK (verdict IS NULL OR verdict IN ('resolved','official-failed','probe-rejected','error')),
        error TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        attempt_started_at INTEGER NOT NULL,
        version INTEGER NOT NULL DEFAULT 0,
        installation_id INTEGER,
        evaluator_repo TEXT,
        evaluator_workflow TEXT,
        evaluator_ref TEXT,
        deadline_s INTEGER,
        run_url TEXT,
        claim_token TEXT,
        claim_until INTEGER
      ) STRICT;
      INSERT INTO evaluations_v3 (key, owner, repo, pr, head_sha, task, probe_set, agent, state, attempt, check_run_id,
          workflow_run_id, verdict, error, created_at, updated_at, attempt_started_at, version, installation_id,
          evaluator_repo, evaluator_workflow, evaluator_ref, deadline_s, run_url)
        SELECT key, owner, repo, pr, head_sha, task, probe_set, agent, state, attempt, check_run_id,
          workflow_run_id, verdict, error, created_at, updated_at, attempt_started_at, version, installation_id,
          evaluator_repo, evaluator_workflow, evaluator_ref, deadline_s, run_url
        FROM evaluations;
      DROP TABLE evaluations;
      ALTER TABLE evaluations_v3 RENAME TO evaluations;
      CREATE INDEX evaluations_pending ON evaluations (state, attempt_started_at)
        WHERE state IN ('queued','dispatched','running');
      CREATE INDEX evaluations_pr ON evaluations (owner, repo, pr);
      CREATE INDEX evaluations_workflow_run ON evaluations (workflow_run_id) WHERE workflow_run_id IS NOT NULL;
      CREATE INDEX evaluations_head ON evaluations (owner, repo, head_sha);
      CREATE INDEX deliveries_received ON deliveries (received_at);
    `,
    },
    {
        version: 4,
        name: "gate check runs",
        sql: `
      CREATE TABLE gates (
        owner TEXT NOT NULL,
        repo TEXT NOT NULL,
        head_sha TEXT NOT NULL,
        pr INTEGER NOT NULL,
        check_run_id INTEGER NOT NULL,
        concluded INTEGER NOT NULL DEFAULT 0 CHECK (concluded IN (0, 1)),
        PRIMARY KEY (owner, repo, head_sha)
      ) STRICT;
    `,
    },
];

;// CONCATENATED MODULE: ./src/store/db.ts


/** The store cannot be used as it is (a newer schema, a broken migration); the message says why. */
class StoreError extends Error {
    name = "StoreError";
}
/**
 * Opens (creating if needed) the store at `file`, or an in-memory one for ":memory:", and brings its
 * schema up to date. WAL lets readers run beside the one writer; the busy timeout makes a second
 * connection (another process of the app) wait for a write lock instead of failing at once.
 */
function openStore(file, opts = {}) {
    const db = new (lib_default())(file);
    try {
        db.pragma(`busy_timeout = ${Math.max(0, Math.floor(opts.busyTimeoutMs ?? 5000))}`);
        // Switching to WAL takes an exclusive lock without waiting on the busy handler, so a second
        // process opening a fresh file while the first migrates it gets SQLITE_BUSY: wait and retry.
        if (file !== ":memory:")
            whileBusy(() => db.pragma("journal_mode = WAL"), opts.busyTimeoutMs ?? 5000);
        // With WAL, NORMAL syncs at checkpoints rather than on every commit: a crash of the app loses
        // nothing, a power loss at most the last commits (GitHub redelivers those webhooks), and a
        // delivery costs no fsyncs.
        db.pragma("synchronous = NORMAL");
        db.pragma("foreign_keys = ON");
        migrate(db, opts.migrations ?? MIGRATIONS);
        return db;
    }
    catch (e) {
        db.close();
        throw e;
    }
}
/** Runs `fn`, retrying every 20 ms while SQLite answers SQLITE_BUSY, for up to `timeoutMs`. */
function whileBusy(fn, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    const pause = new Int32Array(new SharedArrayBuffer(4));
    for (;;) {
        try {
            return fn();
        }
        catch (e) {
            if (e.code !== "SQLITE_BUSY" || Date.now() >= deadline)
                throw e;
            Atomics.wait(pause, 0, 0, 20);
        }
    }
}
/** The schema version of an open store (0 for an empty file). */
function schemaVersion(db) {
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").get();
    if (!table)
        return 0;
    const row = db.prepare("SELECT MAX(version) AS v FROM schema_version").get();
    return row.v ?? 0;
}
/**
 * Applies the migrations the store has not seen, each recorded in `schema_version`, all in one
 * write transaction: two processes opening a fresh file at once apply them once, and a failing
 * migration leaves the schema as it was. Running it again is a no-op.
 */
function migrate(db, migrations = MIGRATIONS) {
    const ordered = [...migrations].sort((a, b) => a.version - b.version);
    ordered.forEach((m, i) => {
        if (m.version !== i + 1)
            throw new StoreError(`Store migrations must be numbered 1, 2, 3, …; found ${m.version} at position ${i + 1}.`);
    });
    // A table rebuild needs foreign keys off, and that pragma is a no-op inside a transaction: turn
    // them off before it when a pending migration rebuilds (another process may apply it first; then
    // nothing runs and they are simply turned back on).
    const foreignKeys = db.pragma("foreign_keys", { simple: true }) === 1;
    const rebuilds = ordered.slice(schemaVersion(db)).some((m) => m.rebuildsTables);
    if (rebuilds && foreignKeys)
        db.pragma("foreign_keys = OFF");
    const run = db.transaction(() => {
        db.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT");
        const current = schemaVersion(db);
        if (current > ordered.length) {
            throw new StoreError(`The store ${db.name} has schema version ${current}, newer than this probegate knows (${ordered.length}); run a newer probegate or use another store file.`);
        }
        const record = db.prepare("INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)");
        for (const m of ordered.slice(current)) {
            try {
                db.exec(m.sql);
            }
            catch (e) {
                throw new StoreError(`Store migration ${m.version} (${m.name}) failed: ${e.message}`);
            }
            if (m.rebuildsTables) {
                const dangling = db.pragma("foreign_key_check");
                if (dangling.length > 0) {
                    const first = dangling[0];
                    throw new StoreError(`Store migration ${m.version} (${m.name}) would leave ${dangling.length} row(s) pointing at missing ${first.parent} rows (first: ${first.table} rowid ${first.rowid}); nothing was changed.`);
                }
            }
            record.run(m.version, m.name, Date.now());
        }
        return schemaVersion(db);
    });
    try {
        return run.immediate();
    }
    finally {
        if (rebuilds && foreignKeys)
            db.pragma("foreign_keys = ON");
    }
}

;// CONCATENATED MODULE: ./src/core/scorecard-html.ts


/** Colours per verdict and per probe category, shared by the charts and the tables' swatches. */
const VERDICT_COLOUR = {
    resolved: "#2da44e",
    "probe-rejected": "#d4a72c",
    "official-failed": "#cf222e",
    error: "#8c959f",
};
const VERDICT_LABEL = {
    resolved: "resolved",
    "probe-rejected": "passed official tests, caught by probes",
    "official-failed": "failed official tests",
    error: "error (nothing judged)",
};
const CATEGORY_COLOUR = {
    structure: "#8250df",
    state: "#bf3989",
    functional: "#0969da",
    memory: "#1a7f37",
    time: "#bc4c00",
    traffic: "#57606a",
};
function escapeHtml(s) {
    return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
/** JSON that is safe inside a <script> element: no "</script>", no HTML comment openers. */
function scriptJson(value) {
    return JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}
/** What the page's script draws: plain data, no code. */
function chartData(card) {
    const labels = card.agents.map((a) => a.agent);
    const share = (a, n) => (a.submissions ? (100 * n) / a.submissions : 0);
    return {
        labels,
        verdicts: VERDICT_ORDER.map((v) => ({
            label: VERDICT_LABEL[v],
            backgroundColor: VERDICT_COLOUR[v],
            data: card.agents.map((a) => Number(share(a, a.verdicts[v]).toFixed(1))),
            counts: card.agents.map((a) => a.verdicts[v]),
        })),
        caught: card.agents.map((a) => (a.caughtRate === null ? null : Number((100 * a.caughtRate).toFixed(1)))),
        categories: probe_check/* CATEGORIES */.R6.map((c) => ({ label: c, backgroundColor: CATEGORY_COLOUR[c], data: card.agents.map((a) => a.failedCategories[c]) })),
    };
}
function agentRow(a, cls = "") {
    const cells = [
        escapeHtml(a.agent),
        String(a.submissions),
        ...VERDICT_ORDER.map((v) => String(a.verdicts[v])),
        percent(a.resolvedRate),
        percent(a.caughtRate),
        probe_check/* CATEGORIES */.R6.filter((c) => a.failedCategories[c] > 0)
            .map((c) => `${c} ${a.failedCategories[c]}`)
            .join(", ") || "–",
    ];
    return `<tr${cls ? ` class="${cls}"` : ""}>${cells.map((c, i) => (i === 0 ? `<th scope="row">${c}</th>` : `<td>${c}</td>`)).join("")}</tr>`;
}
function taskTable(card) {
    const head = `<tr><th scope="col">agent</th>${card.tasks.map((t) => `<th scope="col">${escapeHtml(t)}</th>`).join("")}</tr>`;
    const rows = card.agents.map((a) => {
        const cells = card.tasks.map((t) => {
            const c = a.tasks[t];
            if (!c)
                return "<td>–</td>";
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
function scorecard_html_renderScorecardHtml(card, opts) {
    const legend = VERDICT_ORDER.map((v) => `<span class="sw" style="background:${VERDICT_COLOUR[v]}"></span>${VERDICT_LABEL[v]}`).join(" ");
    const head = ["agent", "submissions", ...VERDICT_ORDER.map((v) => VERDICT_LABEL[v]), "resolved rate", "caught rate", "failed probe categories"];
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
${empty
        ? "<p>No finished evaluation matches: nothing to score yet.</p>"
        : `<p><strong>${percent(card.total.caughtRate)}</strong> of the submissions that passed every official test were rejected by hidden probes; ${percent(card.total.resolvedRate)} of the judged submissions were resolved.</p>
<h2>Verdicts per agent</h2>
<p class="meta">${legend}</p>
<div class="chart"><canvas id="verdicts" role="img" aria-label="Share of each verdict per agent"></canvas></div>
<div class="grid">
<div><h2>Caught by hidden probes</h2><p class="meta">Of each agent's submissions that passed every official test, the share a probe rejected.</p><div class="chart"><canvas id="caught" role="img" aria-label="Share caught by probes per agent"></canvas></div></div>
<div><h2>Failed probe categories</h2><p class="meta">Submissions with a failed check of each category.</p><div class="chart"><canvas id="categories" role="img" aria-label="Failed probe categories per agent"></canvas></div></div>
</div>`}
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

// EXTERNAL MODULE: external "node:module"
var external_node_module_ = __webpack_require__(8995);
;// CONCATENATED MODULE: ./src/core/attempt-summary.ts
/** How good a verdict is for the submission: resolved beats passing the official tests only, which beats failing them; an error judged nothing. */
const VERDICT_RANK = {
    resolved: 3,
    "probe-rejected": 2,
    "official-failed": 1,
    error: 0,
};
/**
 * Both numbers the scorecards need, since they say different things: the first attempt is what the
 * agent delivered unaided; best-of-N is what reruns (and pushes) reached. Ties for best go to the
 * earliest. Null when nothing has finished.
 */
function summarizeAttempts(results) {
    const ordered = [...results].sort((a, b) => a.finishedAt.getTime() - b.finishedAt.getTime() || a.attempt - b.attempt || a.evaluationKey.localeCompare(b.evaluationKey));
    const first = ordered[0];
    if (!first)
        return null;
    const best = ordered.reduce((acc, r) => (VERDICT_RANK[r.verdict] > VERDICT_RANK[acc.verdict] ? r : acc), first);
    return { attempts: ordered.length, first, best };
}

;// CONCATENATED MODULE: ./src/store/scorecard-rows.ts

/**
 * The attempts a scorecard counts, with the probe categories each failed. `owner`/`repo` narrow it
 * to one repository. `since` keeps (repo, PR, task) groups whose first attempt finished at or after
 * it (with `all`: attempts finished at or after it), so a "first attempt" is never one that merely
 * came first inside the window. A group's agent is that of its first finished attempt.
 */
function countedAttempts(db, opts) {
    const rows = db
        .prepare(`SELECT r.evaluation_key, r.attempt, r.verdict, r.finished_at, e.head_sha, e.owner, e.repo, e.pr, e.task, e.agent
       FROM attempt_results r JOIN evaluations e ON e.key = r.evaluation_key
       WHERE (? IS NULL OR e.owner = ?) AND (? IS NULL OR e.repo = ?)
       ORDER BY r.finished_at, r.attempt`)
        .all(opts.owner ?? null, opts.owner ?? null, opts.repo ?? null, opts.repo ?? null);
    const failed = db.prepare("SELECT DISTINCT category FROM probe_failures WHERE evaluation_key = ? AND attempt = ? AND status = 'failed' ORDER BY category");
    // Group attempts by (repo, PR, task); an evaluation without a PR is its own group.
    const groups = new Map();
    for (const r of rows) {
        const id = r.pr === null ? `key:${r.evaluation_key}` : JSON.stringify([r.owner, r.repo, r.pr, r.task]);
        const g = groups.get(id) ?? { agent: r.agent, task: r.task, results: [] };
        g.results.push({ evaluationKey: r.evaluation_key, attempt: r.attempt, headSha: r.head_sha, verdict: r.verdict, finishedAt: new Date(r.finished_at) });
        groups.set(id, g);
    }
    const out = [];
    const add = (g, r) => {
        const categories = failed.all(r.evaluationKey, r.attempt).map((c) => c.category);
        out.push({ agent: g.agent, task: g.task, verdict: r.verdict, failedCategories: categories });
    };
    const since = opts.since?.getTime() ?? -Infinity;
    for (const g of groups.values()) {
        if (opts.basis === "all") {
            for (const r of g.results)
                if (r.finishedAt.getTime() >= since)
                    add(g, r);
            continue;
        }
        const summary = summarizeAttempts(g.results);
        if (summary && summary.first.finishedAt.getTime() >= since)
            add(g, opts.basis === "first-attempt" ? summary.first : summary.best);
    }
    return out;
}
/** Per agent × task × verdict counts of the counted attempts, sorted by agent, task, verdict. */
function scorecardRows(db, opts) {
    const counts = new Map();
    for (const a of countedAttempts(db, opts)) {
        const id = JSON.stringify([a.agent, a.task, a.verdict]);
        const row = counts.get(id) ?? { agent: a.agent, task: a.task, verdict: a.verdict, count: 0 };
        row.count += 1;
        counts.set(id, row);
    }
    return [...counts.values()].sort((a, b) => (a.agent ?? "").localeCompare(b.agent ?? "") || a.task.localeCompare(b.task) || a.verdict.localeCompare(b.verdict));
}

;// CONCATENATED MODULE: ./src/store/scorecard-page.ts






/** The HTML scorecard cannot be drawn here; the message says what is missing. */
class ChartLibraryMissingError extends Error {
    name = "ChartLibraryMissingError";
}
let chartJs;
/**
 * Chart.js's browser build, inlined into scorecard pages so they open from a file or an intranet
 * with no network. Resolved at run time from the installed package (a dependency of probegate), not
 * bundled: the name is built so the bundler leaves it alone, and since its exports map hides dist/,
 * the path goes through the CommonJS entry, which sits in dist/ beside the browser build.
 */
function chartJsSource() {
    if (chartJs !== undefined)
        return chartJs;
    const require = (0,external_node_module_.createRequire)(import.meta.url);
    let file;
    try {
        file = (0,external_node_path_.join)((0,external_node_path_.dirname)(require.resolve(["chart", "js"].join("."))), "chart.umd.min.js");
        chartJs = (0,external_node_fs_.readFileSync)(file, "utf8");
    }
    catch (e) {
        throw new ChartLibraryMissingError(`the HTML scorecard needs the chart.js package installed beside probegate (npm ci installs it): ${e.message}`);
    }
    return chartJs;
}
/** The scorecard of the counted attempts in the store. */
function scorecardOf(db, filter) {
    return buildScorecard(countedAttempts(db, filter), filter.basis);
}
/** Words for what a filter covers: "all repositories", "octo", "octo/gpu-lib". */
function scopeOf(filter) {
    return filter.owner ? `${filter.owner}${filter.repo ? `/${filter.repo}` : ""}` : "all repositories";
}
/** A self-contained HTML scorecard page of the store (see `renderScorecardHtml`). */
function scorecardPage(db, filter, now) {
    return renderScorecardHtml(scorecardOf(db, filter), { chartJs: chartJsSource(), title: "probegate scorecard", generatedAt: now.toISOString(), scope: scopeOf(filter) });
}

;// CONCATENATED MODULE: ./src/cli/scorecard-command.ts








function terminalTable(card) {
    const t = new (cli_table3_default())({
        head: ["agent", "subm.", "resolved", "caught by probes", "official failed", "error", "resolved rate", "caught rate"],
        style: { head: [], border: [] },
        chars: { mid: "", "left-mid": "", "mid-mid": "", "right-mid": "" },
    });
    for (const a of [...card.agents, card.total]) {
        t.push([a.agent, a.submissions, ...VERDICT_ORDER.map((v) => a.verdicts[v]), percent(a.resolvedRate), percent(a.caughtRate)]);
    }
    return t.toString();
}
/**
 * `probegate scorecard`: how each agent does, from the app's store. Tables on the terminal, JSON or
 * markdown for tools, and a self-contained HTML page with charts (`--format html --out page.html`).
 */
function scorecardCommand(flags, io, now = new Date()) {
    const file = (0,external_node_path_.resolve)(flags.db ?? process.env.PROBEGATE_DB ?? "probegate.sqlite");
    if (!(0,external_node_fs_.existsSync)(file)) {
        throw new errors/* InputError */.d(`no store at ${file}: point --db (or $PROBEGATE_DB) at the probegate app's SQLite file.`, { file, field: "--db" });
    }
    const parsed = parseScorecardFilter(flags);
    if (!parsed.ok)
        throw new errors/* InputError */.d(`--${parsed.field} ${parsed.message}.`, { field: `--${parsed.field}` });
    const filter = parsed.filter;
    let db;
    try {
        db = openStore(file);
    }
    catch (e) {
        throw new errors/* InputError */.d(`${file}: not a probegate store (${e.message}).`, { file });
    }
    let card;
    let page = "";
    try {
        card = scorecardOf(db, filter);
        if (flags.format === "html")
            page = scorecard_html_renderScorecardHtml(card, { chartJs: chartJsSource(), title: "probegate scorecard", generatedAt: now.toISOString(), scope: scopeOf(filter) });
    }
    catch (e) {
        if (e instanceof ChartLibraryMissingError)
            throw new errors/* InputError */.d(`${e.message}; --format table, markdown or json work without it.`);
        throw e;
    }
    finally {
        db.close();
    }
    const scope = scopeOf(filter);
    let text;
    switch (flags.format) {
        case "json":
            text = `${JSON.stringify({ scope, since: filter.since?.toISOString() ?? null, ...card }, null, 2)}\n`;
            break;
        case "markdown":
            text = `${renderScorecardMarkdown(card)}\n`;
            break;
        case "html":
            text = page;
            break;
        default:
            text = `${scope}: ${card.total.submissions} submissions, ${percent(card.total.caughtRate)} of official-test passes caught by probes\n${terminalTable(card)}\n`;
    }
    if (flags.out) {
        const out = (0,external_node_path_.resolve)(flags.out);
        if (!(0,external_node_fs_.existsSync)((0,external_node_path_.dirname)(out)))
            throw new errors/* InputError */.d(`--out ${out}: the folder ${(0,external_node_path_.dirname)(out)} does not exist.`, { field: "--out" });
        const tmp = `${out}.tmp-${process.pid}`;
        (0,external_node_fs_.writeFileSync)(tmp, text);
        (0,external_node_fs_.renameSync)(tmp, out);
        io.stderr(`scorecard written to ${out}\n`);
    }
    else {
        io.stdout(text);
    }
    return 0;
}


/***/ })

};
