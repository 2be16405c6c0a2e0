export const id = 712;
export const ids = [712];
export const modules = {

/***/ 2712:
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
// EXTERNAL MODULE: external "node:module"
var external_node_module_ = __webpack_require__(8995);
;// CONCATENATED MODULE: ./src/assets/chart-js.ts



/** The HTML scorecard cannot be drawn here; the message says what is missing. */
class ChartLibraryMissingError extends Error {
    name = "ChartLibraryMissingError";
}
let chartJs;
/**
 * Chart.js's browser build, inlined into scorecard pages so they open from a file or an intranet
 * with no network. Read by the shells that serve or write a page (the CLI, the app's dashboard),
 * never by the store or the core. Resolved at run time from the installed package (a dependency of
 * probegate), not bundled: the name is built so the bundler leaves it alone, and since its exports
 * map hides dist/, the path goes through the CommonJS entry, which sits in dist/ beside the
 * browser build.
 */
function chartJsSource() {
    if (chartJs !== undefined)
        return chartJs;
    const require = (0,external_node_module_.createRequire)(import.meta.url);
    try {
        const file = (0,external_node_path_.join)((0,external_node_path_.dirname)(require.resolve(["chart", "js"].join("."))), "chart.umd.min.js");
        chartJs = (0,external_node_fs_.readFileSync)(file, "utf8");
    }
    catch (e) {
        throw new ChartLibraryMissingError(`the HTML scorecard needs the chart.js package installed beside probegate (npm ci installs it): ${e.message}`);
    }
    return chartJs;
}

// EXTERNAL MODULE: ./src/core/probe-check.ts
var probe_check = __webpack_require__(6448);
;// CONCATENATED MODULE: ./src/core/scorecard/scorecard-ranking.ts
/**
 * Orders agents for a scorecard and ranks them so that no two agents whose resolved-rate intervals
 * overlap are ranked apart. Overlap is not transitive (A overlaps B, B overlaps C, A clear of C),
 * so a tier is a connected run of overlapping intervals: A, B and C share one. Only agents with at
 * least MIN_RATED (wilson.ts) judged submissions are ranked; the rest follow unranked (most evaluations first),
 * and `noAgent` (PRs without an agent) comes last. Within a tier: higher rate, then more
 * evaluations, then name. Pure; returns new objects.
 */
function rankByInterval(agents, noAgent) {
    const ranked = agents.filter((a) => a.agent !== noAgent && !a.figures.resolved.fewerThanMin);
    const unranked = agents.filter((a) => a.agent !== noAgent && a.figures.resolved.fewerThanMin);
    const none = agents.filter((a) => a.agent === noAgent);
    // Sweep by upper end, highest first: an interval joins the current tier while it reaches the
    // lowest lower end seen in that tier (the tier's union is one interval).
    const byHigh = [...ranked].sort((a, b) => b.figures.resolved.high - a.figures.resolved.high);
    const tierOf = new Map();
    let tier = 0;
    let tierLow = Infinity;
    for (const a of byHigh) {
        const r = a.figures.resolved;
        if (tier === 0 || r.high < tierLow) {
            tier += 1;
            tierLow = r.low;
        }
        else
            tierLow = Math.min(tierLow, r.low);
        tierOf.set(a.agent, tier);
    }
    const members = new Map();
    for (const [name, t] of tierOf)
        members.set(t, [...(members.get(t) ?? []), name]);
    const within = (a, b) => (b.figures.resolved.rate ?? -1) - (a.figures.resolved.rate ?? -1) || b.figures.evaluations - a.figures.evaluations || a.agent.localeCompare(b.agent);
    const rankedOut = ranked
        .map((a) => {
        const t = tierOf.get(a.agent);
        return { ...a, rank: t, tiedWith: (members.get(t) ?? []).filter((n) => n !== a.agent).sort() };
    })
        .sort((a, b) => a.rank - b.rank || within(a, b));
    const rest = [...unranked].sort((a, b) => b.figures.evaluations - a.figures.evaluations || a.agent.localeCompare(b.agent)).map((a) => ({ ...a, rank: null, tiedWith: [] }));
    return [...rankedOut, ...rest, ...none.map((a) => ({ ...a, rank: null, tiedWith: [] }))];
}

// EXTERNAL MODULE: ./src/core/median-sketch.ts
var median_sketch = __webpack_require__(3606);
;// CONCATENATED MODULE: ./src/core/wilson.ts
/** Below this many trials a rate is shown as its count ("2/3, too few to rate"), never as a percentage. */
const MIN_RATED = 5;
/** z for a two-sided 95% interval. */
const Z95 = 1.959963984540054;
/**
 * The 95% Wilson score interval of `k` successes in `n` trials. Wilson rather than the normal
 * approximation because scorecards are full of small counts and rates at 0% or 100%, where the
 * normal interval collapses to a point or leaves [0, 1]; Wilson stays inside and stays honest
 * (0 of 10 is [0, 28%], not [0, 0]). The ends at k = 0 and k = n are exact 0 and 1.
 */
function wilsonInterval(k, n, z = Z95) {
    if (!(n > 0) || k < 0 || k > n)
        throw new RangeError(`wilsonInterval needs 0 <= k <= n and n > 0 (got k=${k}, n=${n})`);
    const p = k / n;
    const z2 = z * z;
    const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
    const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / (1 + z2 / n);
    return { low: k === 0 ? 0 : Math.max(0, centre - half), high: k === n ? 1 : Math.min(1, centre + half) };
}
/** `k` of `n` as a Rate (see `Rate`). */
function rateOf(k, n) {
    if (n === 0)
        return { k, n, rate: null, low: null, high: null, fewerThanMin: true };
    const { low, high } = wilsonInterval(k, n);
    return { k, n, rate: k / n, low, high, fewerThanMin: n < MIN_RATED };
}
/** Whether two rates' intervals share a point (then they must not be ranked apart). */
function overlaps(a, b) {
    if (a.low === null || a.high === null || b.low === null || b.high === null)
        return false;
    return a.low <= b.high && b.low <= a.high;
}
const pct = (x) => `${Math.round(x * 100)}%`;
/**
 * A rate for people: "62% (31/50, 95% CI 48–74%)"; under MIN_RATED trials "2/3 (too few to rate)";
 * "–" when there were none. `compact` drops the words ("62% [48–74] 31/50", "2/3 n<5").
 */
function formatRate(r, opts = {}) {
    if (r.n === 0 || r.rate === null || r.low === null || r.high === null)
        return "–";
    if (r.fewerThanMin)
        return opts.compact ? `${r.k}/${r.n} n<${MIN_RATED}` : `${r.k}/${r.n} (too few to rate)`;
    const lo = Math.round(r.low * 100);
    const hi = Math.round(r.high * 100);
    return opts.compact ? `${pct(r.rate)} [${lo}–${hi}] ${r.k}/${r.n}` : `${pct(r.rate)} (${r.k}/${r.n}, 95% CI ${lo}–${hi}%)`;
}

;// CONCATENATED MODULE: ./src/core/scorecard/scorecard-tally.ts




/** Index of a verdict in Tally.v and ScorecardCell.verdicts. */
const VERDICT_INDEX = { resolved: 0, "probe-rejected": 1, "official-failed": 2, error: 3 };
/** Running tallies of one slice. */
class Tally {
    n = 0;
    v = [0, 0, 0, 0];
    cats = new Array(probe_check/* CATEGORIES */.R6.length).fill(0);
    firstJudged = 0;
    firstResolved = 0;
    bestJudged = 0;
    bestResolved = 0;
    durations = new median_sketch/* MedianSketch */.ll();
    gpuSeconds = 0;
    /** Durations counted from cells, not yet given to `durations` (the store supplies them). */
    timedPending = 0;
    count(f) {
        this.n += 1;
        this.v[VERDICT_INDEX[f.verdict]] += 1;
        if (f.failedMask)
            for (let i = 0; i < probe_check/* CATEGORIES */.R6.length; i++)
                if (f.failedMask & (1 << i))
                    this.cats[i] += 1;
        if (f.durationS !== null)
            this.durations.add(f.durationS);
        if (f.gpuSeconds !== null)
            this.gpuSeconds += f.gpuSeconds;
    }
    attempts(f) {
        if (f.verdict === "error")
            return;
        const resolved = f.verdict === "resolved" ? 1 : 0;
        if (f.first) {
            this.firstJudged += 1;
            this.firstResolved += resolved;
        }
        if (f.best) {
            this.bestJudged += 1;
            this.bestResolved += resolved;
        }
    }
    /** `count` for every attempt of a cell at once. */
    countCell(c) {
        this.n += c.n;
        for (let i = 0; i < 4; i++)
            this.v[i] += c.verdicts[i];
        for (let i = 0; i < probe_check/* CATEGORIES */.R6.length; i++)
            this.cats[i] += c.categories[i];
        this.timedPending += c.timed;
        this.gpuSeconds += c.gpuSeconds;
    }
    /** `attempts` for every attempt of a cell at once. */
    attemptsCell(c) {
        const judged = c.n - c.verdicts[VERDICT_INDEX.error];
        const resolved = c.verdicts[VERDICT_INDEX.resolved];
        if (c.first) {
            this.firstJudged += judged;
            this.firstResolved += resolved;
        }
        if (c.best) {
            this.bestJudged += judged;
            this.bestResolved += resolved;
        }
    }
    figures() {
        if (this.timedPending > 0 && this.timedPending !== this.durations.count) {
            throw new Error(`scorecard slice: ${this.timedPending} timed attempts counted but ${this.durations.count} durations supplied`);
        }
        const [resolved, rejected, officialFailed, error] = this.v;
        const judged = this.n - error;
        return {
            evaluations: this.n,
            verdicts: { resolved, "probe-rejected": rejected, "official-failed": officialFailed, error },
            resolved: rateOf(resolved, judged),
            officialPass: rateOf(resolved + rejected, judged),
            probeRejection: rateOf(rejected, resolved + rejected),
            failedCategories: Object.fromEntries(probe_check/* CATEGORIES */.R6.map((c, i) => [c, this.cats[i]])),
            firstAttempt: rateOf(this.firstResolved, this.firstJudged),
            bestOfN: rateOf(this.bestResolved, this.bestJudged),
            medianDurationS: this.durations.median(),
            medianExact: this.durations.exact,
            timed: this.durations.count,
            gpuMinutes: this.gpuSeconds / 60,
        };
    }
}
/** The tallies of one agent: overall and per dimension. */
class AgentTally {
    all = new Tally();
    by = { repository: new Map(), task: new Map(), area: new Map(), week: new Map() };
    /** Puts this agent's tallies for a fact with these dimension keys into `out` from `at` (no allocation per fact). */
    collect(keys, out, at) {
        out[at] = this.all;
        for (let i = 0; i < DIMENSIONS.length; i++) {
            const m = this.by[DIMENSIONS[i]];
            const k = keys[i];
            let t = m.get(k);
            if (!t)
                m.set(k, (t = new Tally()));
            out[at + 1 + i] = t;
        }
    }
    score(agent) {
        const by = Object.fromEntries(DIMENSIONS.map((d) => [d, [...this.by[d]].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, t]) => ({ key, figures: t.figures() }))]));
        return { agent, rank: null, tiedWith: [], figures: this.all.figures(), by };
    }
}

;// CONCATENATED MODULE: ./src/core/scorecard/scorecard-filter.ts
/** Which attempts of which repositories a scorecard counts, from flags or a URL's query, and in words. */
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
    if (input.probeSet) {
        const v = input.probeSet.trim().replace(/^sha256:/, "");
        if (!/^[0-9a-f]{7,64}$/i.test(v))
            return { ok: false, field: "probe-set", message: `'${input.probeSet}': expected a commit or probe-set hash (at least 7 hex digits)` };
        filter.probeSet = v.toLowerCase();
    }
    return { ok: true, filter };
}
/** Whether a result was judged by the probe set a filter names (a prefix of either commit or of the folder's hash). */
function judgedByProbeSet(result, probeSet) {
    const v = result.probeSetVersion;
    return [result.task.probeSet.replace(/^sha256:/, ""), v?.evaluatorCommit, v?.probesCommit].some((x) => typeof x === "string" && x.toLowerCase().startsWith(probeSet));
}
/** Words for what a filter covers: "all repositories", "octo", "octo/gpu-lib". */
function scopeOf(filter) {
    const where = filter.owner ? `${filter.owner}${filter.repo ? `/${filter.repo}` : ""}` : "all repositories";
    return filter.probeSet ? `${where}, probe set ${filter.probeSet}` : where;
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

;// CONCATENATED MODULE: ./src/core/scorecard/scorecard.ts




/** The verdicts in the order a scorecard shows them: best first. */
const VERDICT_ORDER = ["resolved", "probe-rejected", "official-failed", "error"];
/** The dimensions an agent's figures are broken down by. */
const DIMENSIONS = ["repository", "task", "area", "week"];
/** How a scorecard names the attempts no agent was detected on. */
const NO_AGENT = "(no agent detected)";
const UNKNOWN_REPOSITORY = "(unknown repository)";
const UNKNOWN_AREA = "(area not recorded)";
const WEEK_MS = 7 * 86_400_000;
/** 1970-01-05, the first Monday of the epoch. */
const MONDAY0 = 4 * 86_400_000;
/** The Monday (UTC, YYYY-MM-DD) of the week a time falls in. */
function weekOf(ms) {
    const start = ms - ((((ms - MONDAY0) % WEEK_MS) + WEEK_MS) % WEEK_MS);
    return new Date(start).toISOString().slice(0, 10);
}
/**
 * Whether a basis counts this attempt: its group's first or best (group begun at or after `since`,
 * ms), or with `all` any attempt finished at or after `since`. Pure.
 */
function isCounted(f, basis, since = -Infinity) {
    if (basis === "all")
        return f.finishedAt >= since;
    return f.groupFirstAt >= since && (basis === "first-attempt" ? f.first : f.best);
}
/**
 * Folds facts into a scorecard one at a time, in memory bounded by the number of slices (not of
 * facts), so the store can stream a million rows through it. `basis` picks which attempts the
 * figures count; first-attempt and best-of-N are tallied whatever the basis. `since` keeps groups
 * whose first attempt finished at or after it (with `all`: attempts finished at or after it), so a
 * "first attempt" is never one that merely came first inside the window. Pure.
 */
class ScorecardBuilder {
    basis;
    agents = new Map();
    total = new AgentTally();
    weeks = new Map();
    since;
    repositories = new Map();
    keys = ["", "", "", ""];
    tallies = [];
    constructor(basis, since) {
        this.basis = basis;
        this.since = since?.getTime() ?? -Infinity;
    }
    add(f) {
        const counted = isCounted(f, this.basis, this.since);
        const attempts = f.groupFirstAt >= this.since && (f.first || f.best);
        if (!counted && !attempts)
            return;
        const name = f.agent ?? NO_AGENT;
        let agent = this.agents.get(name);
        if (!agent)
            this.agents.set(name, (agent = new AgentTally()));
        const week = this.week(Math.floor((f.finishedAt - MONDAY0) / WEEK_MS));
        const keys = this.keys;
        keys[0] = this.repository(f.owner, f.repo);
        keys[1] = f.task;
        keys[2] = f.area ?? UNKNOWN_AREA;
        keys[3] = week;
        const tallies = this.tallies;
        agent.collect(keys, tallies, 0);
        this.total.collect(keys, tallies, 1 + DIMENSIONS.length);
        for (const t of tallies) {
            if (counted)
                t.count(f);
            if (attempts)
                t.attempts(f);
        }
    }
    /**
     * Adds a cell's attempts as `add` would add each of them, except their durations: each slice's
     * `timedPending` says how many the caller must still give its `durations` (see `forEachSlice`)
     * before `build`. Cells carry no group start, so a builder with `since` refuses them.
     */
    addCell(c) {
        if (Number.isFinite(this.since))
            throw new Error("ScorecardBuilder.addCell: cells cannot honour `since`; add facts instead");
        const counted = this.basis === "all" || (this.basis === "first-attempt" ? c.first : c.best);
        const attempts = c.first || c.best;
        if ((!counted && !attempts) || c.n === 0)
            return;
        const name = c.agent ?? NO_AGENT;
        let agent = this.agents.get(name);
        if (!agent)
            this.agents.set(name, (agent = new AgentTally()));
        const keys = this.keys;
        keys[0] = this.repository(c.owner, c.repo);
        keys[1] = c.task;
        keys[2] = c.area ?? UNKNOWN_AREA;
        keys[3] = this.week(c.week);
        const tallies = this.tallies;
        agent.collect(keys, tallies, 0);
        this.total.collect(keys, tallies, 1 + DIMENSIONS.length);
        for (const t of tallies) {
            if (counted)
                t.countCell(c);
            if (attempts)
                t.attemptsCell(c);
        }
    }
    /** The label of a week index (whole weeks since 1970-01-05). */
    week(wk) {
        let week = this.weeks.get(wk);
        if (week === undefined)
            this.weeks.set(wk, (week = weekOf(MONDAY0 + wk * WEEK_MS)));
        return week;
    }
    /** Every slice so far: agent name (null: everyone), dimension (null: overall), key ("" overall), its tally. */
    forEachSlice(fn) {
        const visit = (name, a) => {
            fn(name, null, "", a.all);
            for (const d of DIMENSIONS)
                for (const [k, t] of a.by[d])
                    fn(name, d, k, t);
        };
        for (const [name, a] of this.agents)
            visit(name, a);
        visit(null, this.total);
    }
    /** The tally of one slice (see forEachSlice), if any attempt reached it. */
    slice(agent, dimension, key) {
        const a = agent === null ? this.total : this.agents.get(agent);
        if (!a)
            return undefined;
        return dimension === null ? a.all : a.by[dimension].get(key);
    }
    repository(owner, repo) {
        if (!owner || !repo)
            return UNKNOWN_REPOSITORY;
        let names = this.repositories.get(owner);
        if (!names)
            this.repositories.set(owner, (names = new Map()));
        let label = names.get(repo);
        if (label === undefined)
            names.set(repo, (label = `${owner}/${repo}`));
        return label;
    }
    build() {
        const scores = [...this.agents].map(([name, t]) => t.score(name));
        const total = this.total.score("all agents");
        const keys = Object.fromEntries(DIMENSIONS.map((d) => [d, total.by[d].map((s) => s.key)]));
        return { basis: this.basis, since: Number.isFinite(this.since) ? new Date(this.since).toISOString() : null, agents: rankByInterval(scores, NO_AGENT), total, keys };
    }
}
/** The scorecard of a list of facts (see ScorecardBuilder). Pure. */
function buildScorecard(facts, basis, since) {
    const b = new ScorecardBuilder(basis, since);
    for (const f of facts)
        b.add(f);
    return b.build();
}
/** The bit mask of a list of failed categories (ScorecardFact.failedMask). */
function categoryMask(categories) {
    let m = 0;
    for (const c of categories) {
        const i = probe_check/* CATEGORIES */.R6.indexOf(c);
        if (i >= 0)
            m |= 1 << i;
    }
    return m;
}

;// CONCATENATED MODULE: ./src/core/scorecard/scorecard-drilldown.ts
/** How many evaluations each agent's drill-down lists (the newest). */
const DRILLDOWN_LIMIT = 50;
/**
 * The PR's page on GitHub (or GitHub Enterprise at `serverUrl`), or null when the attempt has no
 * PR. Only http(s) server URLs are used, so a crafted one cannot become a `javascript:` link.
 */
function prUrl(line, serverUrl = "https://github.com") {
    if (line.pr === null || !line.owner || !line.repo || !/^https?:\/\/[^/\s]+/i.test(serverUrl))
        return null;
    return `${serverUrl.replace(/\/+$/, "")}/${encodeURIComponent(line.owner)}/${encodeURIComponent(line.repo)}/pull/${line.pr}`;
}
/** Whether a run URL from a result or the store may be linked (http or https only). */
function linkable(url) {
    return url && /^https?:\/\//i.test(url) ? url : null;
}
/** The newest `limit` lines per agent, newest first (ties: the later in input order first). Pure. */
function latestPerAgent(lines, limit = DRILLDOWN_LIMIT) {
    const out = new Map();
    lines
        .map((l, i) => [l, i])
        .sort(([a, i], [b, j]) => (a.finishedAt < b.finishedAt ? 1 : a.finishedAt > b.finishedAt ? -1 : j - i))
        .forEach(([l]) => {
        const list = out.get(l.agent) ?? [];
        if (list.length < limit)
            list.push(l);
        out.set(l.agent, list);
    });
    return out;
}

;// CONCATENATED MODULE: ./src/core/scorecard/scorecard-chart-data.ts


/** Colours per verdict and per probe category, shared by the charts and the tables' swatches. */
const VERDICT_COLOUR = { resolved: "#2da44e", "probe-rejected": "#d4a72c", "official-failed": "#cf222e", error: "#8c959f" };
const CATEGORY_COLOUR = {
    structure: "#8250df",
    state: "#bf3989",
    functional: "#0969da",
    memory: "#1a7f37",
    time: "#bc4c00",
    traffic: "#57606a",
};
const AGENT_COLOURS = ["#0969da", "#cf222e", "#2da44e", "#8250df", "#bc4c00", "#bf3989", "#1b7c83", "#57606a", "#d4a72c", "#6639ba"];
/** Weekly charts show the most recent weeks only; the tables keep them all. */
const TREND_WEEKS = 26;
const scorecard_chart_data_pct = (x) => (x === null ? null : Number((100 * x).toFixed(1)));
/** An interval chart's series: agents with at least MIN_RATED trials (fewer are not drawn as rates). */
function intervals(agents, pick) {
    const shown = agents.filter((a) => !pick(a).fewerThanMin);
    return {
        labels: shown.map((a) => a.agent),
        ranges: shown.map((a) => [scorecard_chart_data_pct(pick(a).low), scorecard_chart_data_pct(pick(a).high)]),
        points: shown.map((a) => scorecard_chart_data_pct(pick(a).rate)),
        counts: shown.map((a) => [pick(a).k, pick(a).n]),
        omitted: agents.filter((a) => pick(a).fewerThanMin && pick(a).n > 0).map((a) => `${a.agent} (${pick(a).k}/${pick(a).n})`),
    };
}
/**
 * What the page's script draws, as plain data (no code): the resolved-rate ranking and the
 * probe-rejection rate with their 95% intervals, failed probe categories stacked per agent, and
 * weekly trends (resolved rate where a week has at least 5 judged, evaluations per week).
 */
function chartData(card) {
    const weeks = card.keys.week.slice(-TREND_WEEKS);
    const agents = card.agents;
    return {
        ranking: intervals(agents, (a) => a.figures.resolved),
        probeRejection: intervals(agents, (a) => a.figures.probeRejection),
        categories: {
            labels: agents.map((a) => a.agent),
            datasets: probe_check/* CATEGORIES */.R6.map((c) => ({ label: c, backgroundColor: CATEGORY_COLOUR[c], data: agents.map((a) => a.figures.failedCategories[c]) })),
        },
        verdicts: {
            labels: agents.map((a) => a.agent),
            datasets: VERDICT_ORDER.map((v) => ({ label: v, backgroundColor: VERDICT_COLOUR[v], data: agents.map((a) => a.figures.verdicts[v]) })),
        },
        weekly: {
            labels: weeks,
            resolved: agents.map((a, i) => {
                const byWeek = new Map(a.by.week.map((s) => [s.key, s.figures.resolved]));
                return {
                    label: a.agent,
                    borderColor: AGENT_COLOURS[i % AGENT_COLOURS.length],
                    backgroundColor: AGENT_COLOURS[i % AGENT_COLOURS.length],
                    data: weeks.map((w) => {
                        const r = byWeek.get(w);
                        return r && !r.fewerThanMin ? scorecard_chart_data_pct(r.rate) : null;
                    }),
                };
            }),
            evaluations: agents.map((a, i) => {
                const byWeek = new Map(a.by.week.map((s) => [s.key, s.figures.evaluations]));
                return { label: a.agent, backgroundColor: AGENT_COLOURS[i % AGENT_COLOURS.length], data: weeks.map((w) => byWeek.get(w) ?? 0) };
            }),
        },
    };
}

;// CONCATENATED MODULE: ./src/core/scorecard/scorecard-page-script.ts
/**
 * The scorecard page's own script (plain ES5, inlined after Chart.js): draws the charts from the
 * page's JSON data block and opens an agent's drill-down from the ranking. It reads only that data
 * block and makes no request; the charts are labelled with counts so a reader never sees a bare
 * percentage for fewer than 5 evaluations (those agents are listed under the chart instead).
 */
const PAGE_SCRIPT = `
(function () {
  function openDrill(id) {
    var d = document.getElementById(id);
    if (!d) return;
    d.open = true;
    d.scrollIntoView({ block: "start" });
  }
  document.addEventListener("click", function (e) {
    var a = e.target && e.target.closest ? e.target.closest("a.drill-link") : null;
    if (!a) return;
    e.preventDefault();
    openDrill(a.getAttribute("href").slice(1));
  });
  if (location.hash && location.hash.indexOf("#drill-") === 0) openDrill(location.hash.slice(1));
  if (typeof Chart === "undefined") return;
  var d = JSON.parse(document.getElementById("scorecard-data").textContent);
  var pctAxis = { min: 0, max: 100, ticks: { callback: function (v) { return v + "%"; } } };
  function intervalChart(id, s, colour) {
    var el = document.getElementById(id);
    if (!el || !s.labels.length) return;
    new Chart(el, {
      type: "bar",
      data: { labels: s.labels, datasets: [
        { type: "bar", label: "95% interval", data: s.ranges, backgroundColor: colour + "55", borderColor: colour, borderWidth: 1, barPercentage: 0.6 },
        { type: "line", label: "rate", data: s.points, showLine: false, pointRadius: 5, pointStyle: "rectRot", backgroundColor: colour, borderColor: colour }
      ] },
      options: { indexAxis: "y", maintainAspectRatio: false, animation: false, scales: { x: pctAxis },
        plugins: { legend: { display: false }, tooltip: { callbacks: { label: function (c) {
          var n = s.counts[c.dataIndex];
          return s.points[c.dataIndex] + "% (" + n[0] + "/" + n[1] + "), 95% CI " + s.ranges[c.dataIndex][0] + "–" + s.ranges[c.dataIndex][1] + "%"; } } } } }
    });
  }
  intervalChart("ranking", d.ranking, "#0969da");
  intervalChart("probe-rejection", d.probeRejection, "#d4a72c");
  var stacked = { x: { stacked: true, ticks: { precision: 0 } }, y: { stacked: true } };
  if (document.getElementById("categories")) new Chart(document.getElementById("categories"), {
    type: "bar", data: d.categories,
    options: { indexAxis: "y", maintainAspectRatio: false, animation: false, scales: stacked }
  });
  if (document.getElementById("trend-resolved")) new Chart(document.getElementById("trend-resolved"), {
    type: "line", data: { labels: d.weekly.labels, datasets: d.weekly.resolved },
    options: { maintainAspectRatio: false, animation: false, spanGaps: false, scales: { y: pctAxis } }
  });
  if (document.getElementById("trend-evaluations")) new Chart(document.getElementById("trend-evaluations"), {
    type: "bar", data: { labels: d.weekly.labels, datasets: d.weekly.evaluations },
    options: { maintainAspectRatio: false, animation: false, scales: { x: { stacked: true }, y: { stacked: true, ticks: { precision: 0 } } } }
  });
})();
`;

;// CONCATENATED MODULE: ./src/core/scorecard/scorecard-markdown.ts



/** "1", "=1" (shares the tier with others), or "–" (not ranked). */
function rankLabel(a) {
    if (a.rank === null)
        return "–";
    return a.tiedWith.length ? `=${a.rank}` : String(a.rank);
}
/** Seconds for people: "42 s", "3.5 min", "1.2 h"; "≈" when the median is bucketed; "–" when unknown. */
function formatDuration(s, exact) {
    if (s === null)
        return "–";
    const approx = exact ? "" : "≈";
    if (s < 90)
        return `${approx}${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
    if (s < 5400)
        return `${approx}${(s / 60).toFixed(1)} min`;
    return `${approx}${(s / 3600).toFixed(1)} h`;
}
const cell = (s) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");
/** The failed categories of a slice: "memory 2, traffic 1", or "–". */
function categoryList(a) {
    return probe_check/* CATEGORIES */.R6.filter((c) => a.figures.failedCategories[c] > 0).map((c) => `${c} ${a.figures.failedCategories[c]}`).join(", ") || "–";
}
/** The columns of the ranking, as text cells (shared by markdown and the terminal table). */
function rankingCells(a) {
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
const RANKING_HEAD = ["rank", "agent", "evaluations", "resolved", "passed official", "probe rejection", "first attempt", "best of N", "median time", "GPU-min", "failed probe categories"];
/**
 * The scorecard as markdown (a job summary, a PR comment): the ranking with intervals, then the
 * resolved rate per area and per week, and any results-folder files left out.
 */
function renderScorecardMarkdown(card, opts = {}) {
    const table = (head, rows) => [`| ${head.map(cell).join(" | ")} |`, `|${head.map((_, i) => (i < 2 ? "---" : "---:")).join("|")}|`, ...rows.map((r) => `| ${r.map(cell).join(" | ")} |`)];
    const out = [
        `**probegate scorecard**${opts.scope ? ` · ${opts.scope}` : ""} · counted: ${describeBasis(card.basis)}${card.since ? ` · groups from ${card.since.slice(0, 10)}` : ""} · ${card.total.figures.evaluations} evaluations`,
        "",
        ...table(RANKING_HEAD, [...card.agents.map(rankingCells), rankingCells(card.total).map((c, i) => (i === 1 ? `**${c}**` : c))]),
        "",
        `Rates: percentage [95% Wilson interval] k/n; under ${MIN_RATED}, the count alone. Agents whose intervals overlap share a rank (=). Probe rejection: of the submissions that passed every official test, the share a hidden probe caught.`,
    ];
    const by = (d, keys) => {
        if (!keys.length)
            return;
        const rows = [...card.agents, card.total].map((a) => {
            const m = new Map(a.by[d].map((s) => [s.key, s.figures.resolved]));
            return [a.agent, ...keys.map((k) => (m.has(k) ? formatRate(m.get(k), { compact: true }) : "–"))];
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

;// CONCATENATED MODULE: ./src/core/scorecard/scorecard-html.ts







function escapeHtml(s) {
    return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
/** JSON that is safe inside a <script> element: no "</script>", no HTML comment openers. */
function scriptJson(value) {
    return JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}
const e = escapeHtml;
const rate = (r) => e(formatRate(r, { compact: true }));
const drillId = (i) => `drill-${i}`;
const cats = (a) => probe_check/* CATEGORIES */.R6.filter((c) => a.figures.failedCategories[c] > 0)
    .map((c) => `<span class="sw" style="background:${CATEGORY_COLOUR[c]}"></span>${c} ${a.figures.failedCategories[c]}`)
    .join(" ") || "–";
const RANK_HEAD = ["rank", "agent", "evaluations", "resolved", "passed official", "probe rejection", "first attempt", "best of N", "median time", "GPU-min", "failed probe categories"];
function rankingRow(a, i) {
    const f = a.figures;
    const name = i === null ? `<th scope="row">${e(a.agent)}</th>` : `<th scope="row"><a class="drill-link" href="#${drillId(i)}">${e(a.agent)}</a></th>`;
    const cells = [e(rankLabel(a)), f.evaluations, rate(f.resolved), rate(f.officialPass), rate(f.probeRejection), rate(f.firstAttempt), rate(f.bestOfN), e(formatDuration(f.medianDurationS, f.medianExact)), f.gpuMinutes.toFixed(1), cats(a)];
    return `<tr${i === null ? ' class="total"' : ""}><td>${cells[0]}</td>${name}${cells.slice(1).map((c) => `<td>${c}</td>`).join("")}</tr>`;
}
function breakdown(card, d) {
    const keys = d === "week" ? card.keys.week.slice(-TREND_WEEKS) : card.keys[d];
    if (!keys.length)
        return "";
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
function drillDown(a, i, lines, serverUrl) {
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
function renderScorecardHtml(card, opts) {
    const empty = card.agents.length === 0;
    const data = chartData(card);
    const h = (n) => Math.max(140, 36 * n + 70);
    const omitted = (list) => (list.length ? `<p class="meta">Not drawn (fewer than 5): ${e(list.join(", "))}.</p>` : "");
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

// EXTERNAL MODULE: ./node_modules/zod/v4/classic/schemas.js + 7 modules
var schemas = __webpack_require__(2311);
;// CONCATENATED MODULE: ./src/core/agent-identity.ts
/**
 * Who the known coding agents are, as GitHub shows them. Scorecards group by the normalised agent
 * name, so every spelling of one agent (App login, bot user, GraphQL login, co-author line) must
 * land on the same name.
 */
/** PR author logins of known agents (matched case-insensitively) → agent name. */
const DEFAULT_AGENT_AUTHORS = {
    "copilot": "copilot",
    "copilot-swe-agent[bot]": "copilot",
    "devin-ai-integration[bot]": "devin",
    "chatgpt-codex-connector[bot]": "codex",
    "claude[bot]": "claude",
    "cursor[bot]": "cursor",
    "google-labs-jules[bot]": "jules",
    "openhands-agent": "openhands",
    "sweep-ai[bot]": "sweep",
    "amazon-q-developer[bot]": "amazon-q",
    "codegen-sh[bot]": "codegen",
    "factory-droid[bot]": "factory",
};
/**
 * Co-author e-mail addresses of known agents (matched case-insensitively) → agent name; a name key
 * applies only to a trailer without an address. GitHub noreply addresses
 * (`123+login@users.noreply.github.com`) are looked up by login in the author table instead.
 */
const DEFAULT_AGENT_CO_AUTHORS = {
    "noreply@anthropic.com": "claude",
    "claude": "claude",
    "cursoragent@cursor.com": "cursor",
    "cursor agent": "cursor",
    "openhands@all-hands.dev": "openhands",
    "openhands": "openhands",
    "devin ai": "devin",
    "noreply@aider.chat": "aider",
};
/** Head-branch prefixes the agents push to → agent name. */
const DEFAULT_AGENT_BRANCH_PREFIXES = {
    "codex/": "codex",
    "claude/": "claude",
    "copilot/": "copilot",
    "cursor/": "cursor",
    "devin/": "devin",
};
/**
 * The scorecard name of an agent: lower case, without GitHub's `[bot]` suffix or GraphQL's `app/`
 * prefix, and with known logins mapped to their product (`copilot-swe-agent[bot]` → `copilot`).
 */
function normalizeAgent(name) {
    const plain = name.trim().toLowerCase().replace(/^app\//, "");
    const known = DEFAULT_AGENT_AUTHORS[plain] ?? DEFAULT_AGENT_AUTHORS[`${plain}[bot]`];
    if (known)
        return known;
    return plain.replace(/\[bot\]$/, "");
}

;// CONCATENATED MODULE: ./src/core/commit-trailers.ts
const TRAILER = /^([A-Za-z0-9][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*)$/;
/**
 * The trailers of a commit message, as git reads them: the lines of the last paragraph, when every
 * line there is `Key: value` (or an indented continuation). A `Co-authored-by:` quoted in the body
 * is prose, not a trailer, and does not count.
 */
function parseTrailers(message) {
    const paragraphs = message.replace(/\r\n?/g, "\n").trim().split(/\n[ \t]*\n/);
    const last = paragraphs[paragraphs.length - 1] ?? "";
    // The subject line alone is never a trailer block.
    if (paragraphs.length < 2)
        return [];
    const out = [];
    for (const line of last.split("\n")) {
        const prev = out[out.length - 1];
        if (/^[ \t]+\S/.test(line) && prev) {
            prev.value = `${prev.value} ${line.trim()}`;
            continue;
        }
        const m = TRAILER.exec(line);
        if (!m)
            return [];
        out.push({ key: m[1] ?? "", value: (m[2] ?? "").trim() });
    }
    return out;
}
/** The people named by `Co-authored-by` trailers (any case) of one commit message. */
function coAuthors(message) {
    return parseTrailers(message)
        .filter((t) => t.key.toLowerCase() === "co-authored-by")
        .map((t) => {
        const m = /^(.*?)\s*<([^<>]*)>\s*$/.exec(t.value);
        return m ? { name: (m[1] ?? "").trim(), email: (m[2] ?? "").trim() || null } : { name: t.value, email: null };
    });
}

;// CONCATENATED MODULE: ./src/core/agent-detect.ts


function lowerKeys(...maps) {
    const out = new Map();
    for (const m of maps)
        for (const [k, v] of Object.entries(m ?? {}))
            out.set(k.trim().toLowerCase(), normalizeAgent(v));
    return out;
}
function authorAgent(login, type, authors) {
    const l = login.trim().toLowerCase().replace(/^app\//, "");
    // GraphQL and some REST payloads show an App's bot without the `[bot]` suffix, typed `Bot`.
    return authors.get(l) ?? (type === "Bot" && !l.endsWith("[bot]") ? authors.get(`${l}[bot]`) : undefined);
}
/**
 * A co-author with an address is known by the address only: a person named Claude who signs with
 * their own address is not Claude the agent. Names count only in trailers without an address.
 */
function coAuthorAgent(p, coAuthorMap, authors) {
    if (!p.email)
        return coAuthorMap.get(p.name.toLowerCase()) ?? authorAgent(p.name, "Bot", authors);
    const email = p.email.toLowerCase();
    const noreply = /^(?:\d+\+)?([^@]+)@users\.noreply\.github\.com$/.exec(email);
    return coAuthorMap.get(email) ?? (noreply?.[1] ? authorAgent(noreply[1], "Bot", authors) : undefined);
}
/**
 * Which agent wrote this PR, or null for a PR by a person (or a non-agent bot such as Dependabot).
 * Signals are tried in order of how hard they are to fake by accident: the author login, then the
 * commits' `Co-authored-by` trailers, then the head-branch prefix, then a label; the first that
 * matches names the agent. The agent name is normalised (`copilot-swe-agent[bot]` → `copilot`) so
 * scorecards count one agent once.
 */
function detectAgent(input, rules = {}) {
    const useDefaults = rules.defaults ?? true;
    const authors = lowerKeys(useDefaults ? DEFAULT_AGENT_AUTHORS : undefined, rules.authors);
    const coAuthorMap = lowerKeys(useDefaults ? DEFAULT_AGENT_CO_AUTHORS : undefined, rules.coAuthors);
    const prefixes = lowerKeys(useDefaults ? DEFAULT_AGENT_BRANCH_PREFIXES : undefined, rules.branchPrefixes);
    const labels = lowerKeys(rules.labels);
    const byAuthor = authorAgent(input.author.login, input.author.type, authors);
    if (byAuthor)
        return { agent: byAuthor, via: "author", matched: input.author.login };
    for (const message of input.commitMessages ?? []) {
        for (const person of coAuthors(message)) {
            const agent = coAuthorAgent(person, coAuthorMap, authors);
            if (agent)
                return { agent, via: "co-author", matched: person.email ? `${person.name} <${person.email}>` : person.name };
        }
    }
    const branch = (input.headRef ?? "").replace(/^refs\/heads\//, "").toLowerCase();
    // The longest prefix wins, so a configured `codex/review/` can override the built-in `codex/`.
    const prefix = [...prefixes.keys()].filter((p) => p && branch.startsWith(p)).sort((a, b) => b.length - a.length)[0];
    if (prefix !== undefined)
        return { agent: prefixes.get(prefix) ?? prefix, via: "branch", matched: input.headRef ?? "" };
    for (const label of input.labels ?? []) {
        const agent = labels.get(label.trim().toLowerCase());
        if (agent)
            return { agent, via: "label", matched: label };
    }
    return null;
}

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

;// CONCATENATED MODULE: ./src/core/scorecard/scorecard-results.ts





/** A result file's sidecar: `NAME.context.json` beside `NAME.json`. */
const CONTEXT_SUFFIX = ".context.json";
/**
 * What a result file does not say by itself: which PR it judged and who wrote it. The standalone
 * Action writes it beside the result; a workflow can write it from `github.event` (README,
 * "Scorecards"). `agent` wins; without it the agent is detected from `author` / `headRef` /
 * `labels` by the built-in rules. Every field is optional.
 */
const ResultContextSchema = schemas/* strictObject */.rej({
    repo: schemas/* string */.YjP().regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, "expected OWNER/NAME").optional(),
    pr: schemas/* number */.aig().int().min(1).optional(),
    headSha: schemas/* string */.YjP().optional(),
    agent: schemas/* string */.YjP().min(1).nullable().optional(),
    author: schemas/* string */.YjP().optional(),
    authorType: schemas/* string */.YjP().optional(),
    headRef: schemas/* string */.YjP().optional(),
    labels: schemas/* array */.YOg(schemas/* string */.YjP()).optional(),
    runUrl: schemas/* string */.YjP().optional(),
});
/** `owner/name` from a submission's repo field: `owner/name`, or a GitHub-style URL or scp path. */
function repoOf(text) {
    if (!text)
        return null;
    const m = /^(?:[a-z+]+:\/\/[^/]+\/|git@[^:]+:)?([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/?$/.exec(text.trim());
    return m ? { owner: m[1], repo: m[2] } : null;
}
/** The PR number in a ref such as `refs/pull/12/head`, `refs/pull/12/merge` or `pull/12/head`. */
function prOfRef(ref) {
    const m = /(?:^|\/)pull\/(\d+)\/(?:head|merge)$/.exec(ref ?? "");
    return m ? Number(m[1]) : null;
}
/** Who and what one result file is about: the sidecar first, then the result's own fields. */
function identify(f) {
    const c = f.context ?? {};
    const where = repoOf(c.repo) ?? repoOf(f.result.submission.repo);
    const signals = c.author ? detectAgent({ author: { login: c.author, type: c.authorType ?? null }, headRef: c.headRef ?? null, labels: c.labels ?? [] }) : null;
    const agent = c.agent !== undefined ? (c.agent === null ? null : normalizeAgent(c.agent)) : (signals?.agent ?? null);
    return {
        owner: where?.owner ?? null,
        repo: where?.repo ?? null,
        pr: c.pr ?? prOfRef(f.result.submission.ref),
        agent,
        headSha: c.headSha ?? f.result.submission.sha ?? null,
    };
}
/**
 * Scorecard facts and drill-down lines from result files, grouped as the store groups them: by
 * (repo, PR, task) where the PR is known, else by evaluation key, else by (commit, task), else the
 * file alone. Within a group attempts are ordered by finish time (then file name); the first is
 * the first attempt, the best the first with the best verdict. The same result twice (same
 * signature, or same task, commit, key and finish time unsigned) counts once; the copy is skipped
 * and said. Pure.
 */
function factsOfResults(files) {
    const skipped = [];
    const seen = new Map();
    const groups = new Map();
    for (const f of [...files].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0))) {
        const r = f.result;
        const at = Date.parse(r.finishedAt);
        if (Number.isNaN(at)) {
            skipped.push({ file: f.file, why: `finishedAt ${JSON.stringify(r.finishedAt)} is not a date` });
            continue;
        }
        const fingerprint = r.signature?.value ?? JSON.stringify([r.task.id, r.submission.sha ?? null, r.evaluationKey ?? null, r.finishedAt, r.verdict]);
        const twin = seen.get(fingerprint);
        if (twin) {
            skipped.push({ file: f.file, why: `the same result as ${twin} (counted once)` });
            continue;
        }
        seen.set(fingerprint, f.file);
        const id = identify(f);
        const group = id.pr !== null && id.owner && id.repo
            ? JSON.stringify([id.owner, id.repo, id.pr, r.task.id])
            : r.evaluationKey
                ? `key:${r.evaluationKey}`
                : id.headSha
                    ? JSON.stringify([id.headSha, r.task.id])
                    : `file:${f.file}`;
        const list = groups.get(group) ?? [];
        list.push({ f, id, at });
        groups.set(group, list);
    }
    const facts = [];
    const lines = [];
    for (const list of groups.values()) {
        const ordered = [...list].sort((a, b) => a.at - b.at || (a.f.file < b.f.file ? -1 : 1));
        const best = ordered.reduce((acc, x) => (VERDICT_RANK[x.f.result.verdict] > VERDICT_RANK[acc.f.result.verdict] ? x : acc), ordered[0]);
        const groupFirstAt = ordered[0].at;
        ordered.forEach((x, i) => {
            const r = x.f.result;
            const failed = r.probes.filter((p) => p.status === "failed").map((p) => p.category);
            facts.push({
                agent: x.id.agent, owner: x.id.owner, repo: x.id.repo, task: r.task.id, area: r.task.area, verdict: r.verdict,
                finishedAt: x.at, groupFirstAt, first: i === 0, best: x === best, failedMask: categoryMask(failed),
                durationS: r.durations.totalS, gpuSeconds: r.gpuSeconds,
            });
            lines.push({
                agent: x.id.agent, owner: x.id.owner, repo: x.id.repo, pr: x.id.pr, task: r.task.id, verdict: r.verdict, attempt: i + 1,
                finishedAt: new Date(x.at).toISOString(), first: i === 0, best: x === best, failedCategories: [...new Set(failed)],
                durationS: r.durations.totalS, headSha: x.id.headSha, evaluationKey: r.evaluationKey ?? null, runUrl: x.f.context?.runUrl ?? null, file: x.f.file,
            });
        });
    }
    return { facts, lines, skipped };
}

// EXTERNAL MODULE: ./src/engine/errors.ts
var errors = __webpack_require__(7679);
// EXTERNAL MODULE: ./src/store/db.ts + 4 modules
var store_db = __webpack_require__(664);
;// CONCATENATED MODULE: ./src/store/scorecard-cells.ts



/** Histogram dimension numbers of scorecard_durations (migration 7). */
const DIM_OF = { 1: "repository", 2: "task", 3: "area", 4: "week" };
const scorecard_cells_WEEK_MS = 7 * 86_400_000;
/**
 * Reading a slice's exact durations costs a fraction of what folding a row in the full scan does
 * (one value, one sketch add, against ten tallies): past this many exact durations per attempt in
 * the store, the scan is cheaper.
 */
const SCAN_SHARE = 3;
/** The flags (scorecard_rows.counted) whose attempts a basis counts, as SQL; null for every attempt. */
function countedFlags(basis) {
    return basis === "all" ? null : basis === "first-attempt" ? "(1, 3)" : "(2, 3)";
}
/**
 * The scorecard of every attempt in the store (no repository or `since` filter) from the cells
 * migration 7's triggers keep: a few thousand rows of counts instead of one per attempt, so it
 * costs about the same at a million evaluations as at ten thousand. Figures are those of the full
 * scan (scorecardScan): counts and rates exactly; GPU minutes up to float rounding (summed in
 * another order); medians the same as the scan's MedianSketch: exact for slices of at most
 * EXACT_LIMIT timed attempts (their durations read through an index), from the same 1%-wide
 * buckets above that. With `unlessScanIsCheaper`, null when the small slices' exact durations
 * would read more rows than the full scan (a small store: most slices under EXACT_LIMIT).
 */
function scorecardFromCells(db, basis, opts = {}) {
    const builder = new ScorecardBuilder(basis);
    const flags = countedFlags(basis);
    const cats = probe_check/* CATEGORIES */.R6.map((_, i) => `cat${i}`).join(", ");
    const rows = db
        .prepare(`SELECT json_extract(agent_j, '$'), owner, repo, task, json_extract(area_j, '$'), wk, flags, n, resolved, rejected, official_failed, errors, ${cats}, timed, gpu
       FROM scorecard_cells WHERE n <> 0 ${flags ? "AND flags <> 0" : ""}`)
        .raw(true);
    const cell = { agent: null, owner: null, repo: null, task: "", area: null, week: 0, first: false, best: false, n: 0, verdicts: [0, 0, 0, 0], categories: probe_check/* CATEGORIES */.R6.map(() => 0), timed: 0, gpuSeconds: 0 };
    const verdicts = cell.verdicts;
    const categories = cell.categories;
    /** Each agent name's stored agent values (NO_AGENT stands for NULL and for anyone named so). */
    const rawAgents = new Map();
    let attempts = 0;
    for (const r of rows.iterate()) {
        cell.agent = r[0];
        cell.owner = r[1];
        cell.repo = r[2];
        cell.task = r[3];
        cell.area = r[4];
        cell.week = r[5];
        cell.first = (r[6] & 1) !== 0;
        cell.best = (r[6] & 2) !== 0;
        cell.n = r[7];
        for (let i = 0; i < 4; i++)
            verdicts[i] = r[8 + i];
        for (let i = 0; i < categories.length; i++)
            categories[i] = r[12 + i];
        cell.timed = r[12 + categories.length];
        cell.gpuSeconds = r[13 + categories.length];
        builder.addCell(cell);
        attempts += cell.n;
        const name = cell.agent ?? NO_AGENT;
        let raw = rawAgents.get(name);
        if (!raw)
            rawAgents.set(name, (raw = new Set()));
        raw.add(cell.agent);
    }
    let exactRows = 0;
    builder.forEachSlice((_agent, _dim, _key, t) => {
        if (t.timedPending > 0 && t.timedPending <= median_sketch/* EXACT_LIMIT */.C_)
            exactRows += t.timedPending;
    });
    if (opts.unlessScanIsCheaper && exactRows > SCAN_SHARE * attempts)
        return null;
    bucketedDurations(db, builder, flags);
    const everyone = [...new Set([...rawAgents.values()].flatMap((s) => [...s]))];
    const exact = exactDurations(db, basis);
    builder.forEachSlice((agent, dim, key, tally) => {
        if (tally.timedPending === 0 || tally.timedPending > median_sketch/* EXACT_LIMIT */.C_)
            return;
        for (const raw of agent === null ? everyone : [...(rawAgents.get(agent) ?? [])])
            for (const d of exact(raw, dim, key))
                tally.durations.add(d);
    });
    return builder.build();
}
/** Gives each slice past EXACT_LIMIT timed attempts its histogram from scorecard_durations. */
function bucketedDurations(db, builder, flags) {
    const big = (t) => (t && t.timedPending > median_sketch/* EXACT_LIMIT */.C_ ? t : undefined);
    const labels = new Map();
    const label = (dim, keyJson) => {
        const memo = `${dim}\u0000${keyJson}`;
        let l = labels.get(memo);
        if (l !== undefined)
            return l;
        const k = JSON.parse(keyJson);
        if (dim === "repository")
            l = k === null ? UNKNOWN_REPOSITORY : String(k);
        else if (dim === "area")
            l = k === null ? UNKNOWN_AREA : String(k);
        else if (dim === "week")
            l = builder.week(k);
        else
            l = String(k);
        labels.set(memo, l);
        return l;
    };
    const names = new Map();
    const stmt = db
        .prepare(`SELECT dim, agent_j, key_j, bucket, SUM(n) FROM scorecard_durations ${flags ? `WHERE flags IN ${flags}` : ""}
       GROUP BY dim, agent_j, key_j, bucket HAVING SUM(n) <> 0`)
        .raw(true);
    let slice = "";
    let targets = [];
    for (const r of stmt.iterate()) {
        const [dimNo, agentJson, keyJson, bucket, n] = r;
        const at = `${dimNo}\u0000${agentJson}\u0000${keyJson}`;
        if (at !== slice) {
            slice = at;
            const dim = DIM_OF[dimNo];
            let name = names.get(agentJson);
            if (name === undefined)
                names.set(agentJson, (name = JSON.parse(agentJson) ?? NO_AGENT));
            const key = label(dim, keyJson);
            const found = [big(builder.slice(name, dim, key)), big(builder.slice(null, dim, key))];
            if (dim === "repository")
                found.push(big(builder.slice(name, null, "")), big(builder.slice(null, null, "")));
            targets = found.filter((t) => t !== undefined);
        }
        for (const t of targets)
            t.durations.addToBucket(bucket, n);
    }
}
/**
 * A reader of one slice's exact durations for one stored agent value, from scorecard_rows through
 * migration 7's (agent, …) indexes: for slices small enough that MedianSketch keeps them exactly.
 */
function exactDurations(db, basis) {
    const counted = basis === "all" ? "" : `AND (counted & ${basis === "first-attempt" ? 1 : 2}) <> 0`;
    const by = (cond) => db.prepare(`SELECT duration_s FROM scorecard_rows WHERE agent IS ? AND ${cond} AND duration_s IS NOT NULL ${counted}`).pluck();
    const stmts = {
        all: by("1"),
        repository: by("owner = ? AND repo = ?"),
        unknownRepository: by("(owner = '' OR repo = '')"),
        task: by("task = ?"),
        area: by("area = ?"),
        noArea: by("area IS NULL"),
        week: by("finished_at >= ? AND finished_at < ?"),
    };
    return (agent, dim, key) => {
        if (dim === null)
            return stmts.all.all(agent);
        if (dim === "repository") {
            if (key === UNKNOWN_REPOSITORY)
                return stmts.unknownRepository.all(agent);
            const cut = key.indexOf("/");
            return stmts.repository.all(agent, key.slice(0, cut), key.slice(cut + 1));
        }
        if (dim === "task")
            return stmts.task.all(agent, key);
        // Two lookups rather than an OR, which SQLite would not answer from the (agent, area) index.
        if (dim === "area")
            return [...(key === UNKNOWN_AREA ? stmts.noArea.all(agent) : []), ...stmts.area.all(agent, key)];
        const start = Date.parse(`${key}T00:00:00Z`);
        return stmts.week.all(agent, start, start + scorecard_cells_WEEK_MS);
    };
}

;// CONCATENATED MODULE: ./src/store/scorecard-rows.ts




/** `counted` bits of scorecard_rows (migration 5): bit 0 the group's first attempt, bit 1 its best. */
const FIRST = 1;
const BEST = 2;
/** verdict_rank (migration 5) back to the verdict. */
const BY_RANK = ["error", "official-failed", "probe-rejected", "resolved"];
/**
 * The WHERE clause and its parameters for a filter over scorecard_rows (columns prefixed by `p`).
 * `counted`: the attempts the basis counts; `first-or-best`: every group's first and best attempt
 * too (the builder sorts them out). With `first-attempt` / `best-of-n`, `since` keeps groups whose
 * first attempt finished at or after it; with `all`, attempts finished at or after it.
 */
function where(filter, which, p = "") {
    const clauses = [];
    const params = [];
    if (filter.owner)
        clauses.push(`${p}owner = ?`), params.push(filter.owner);
    if (filter.repo)
        clauses.push(`${p}repo = ?`), params.push(filter.repo);
    const all = filter.basis === "all";
    if (which === "counted" && !all)
        clauses.push(`(${p}counted & ${filter.basis === "first-attempt" ? FIRST : BEST}) <> 0`);
    if (which === "first-or-best" && !all)
        clauses.push(`(${p}counted & ${FIRST | BEST}) <> 0`);
    if (filter.since) {
        const since = filter.since.getTime();
        if (!all)
            clauses.push(`${p}group_first_at >= ?`), params.push(since);
        else if (which === "counted")
            clauses.push(`${p}finished_at >= ?`), params.push(since);
        else
            clauses.push(`(${p}finished_at >= ? OR ${p}group_first_at >= ?)`), params.push(since, since);
    }
    if (filter.probeSet) {
        // The app keys an evaluation by the evaluator commit; the result names the commits it ran and the folder's hash.
        const row = p || "scorecard_rows.";
        clauses.push(`EXISTS (SELECT 1 FROM attempt_results a JOIN evaluations ev ON ev.key = a.evaluation_key
         WHERE a.evaluation_key = ${row}evaluation_key AND a.attempt = ${row}attempt
           AND (ev.probe_set LIKE ? OR a.evaluator_commit LIKE ? OR a.probes_commit LIKE ? OR a.probe_set_hash LIKE ?))`);
        const prefix = `${filter.probeSet}%`;
        params.push(prefix, prefix, prefix, `sha256:${prefix}`);
    }
    return { sql: clauses.length ? `WHERE ${clauses.join(" AND ")}` : "", params };
}
/**
 * The scorecard of the store's finished attempts. Unfiltered (every repository, no `since`): from
 * the pre-counted cells (scorecardFromCells), a few thousand rows at a million evaluations (or
 * the full scan where the cells would read more: a small store). With a
 * repository or `since` filter: the full scan (scorecardScan), since the cells are not kept per
 * group start and their duration histograms not per repository.
 */
function scorecardOf(db, filter) {
    if (filter.owner || filter.since || filter.probeSet)
        return scorecardScan(db, filter);
    return scorecardFromCells(db, filter.basis, { unlessScanIsCheaper: true }) ?? scorecardScan(db, filter);
}
/**
 * The scorecard of the store's finished attempts by one pass over scorecard_rows, streamed into the
 * core's ScorecardBuilder (raw rows, one reused fact object), so memory stays bounded by the number
 * of slices whatever the number of evaluations. The rows read are those the basis counts plus every
 * group's first and best attempt (for first-attempt against best-of-N). What scorecardOf does with
 * a filter, and the reference its cells are checked against.
 */
function scorecardScan(db, filter) {
    const builder = new ScorecardBuilder(filter.basis, filter.since);
    const w = where(filter, "first-or-best");
    // Fewer, packed columns: crossing into JS costs per row and per value, the packing in SQL does not.
    const rows = db
        .prepare(`SELECT agent, owner, repo, task, area, verdict_rank | (counted << 2) | (failed_mask << 4), finished_at, group_first_at, duration_s, gpu_seconds
       FROM scorecard_rows ${w.sql}`)
        .raw(true);
    const fact = {
        agent: null, owner: null, repo: null, task: "", area: null, verdict: "error", finishedAt: 0, groupFirstAt: 0,
        first: false, best: false, failedMask: 0, durationS: null, gpuSeconds: null,
    };
    for (const r of rows.iterate(...w.params)) {
        const packed = r[5];
        fact.agent = r[0];
        fact.owner = r[1];
        fact.repo = r[2];
        fact.task = r[3];
        fact.area = r[4];
        fact.verdict = BY_RANK[packed & 3];
        fact.first = (packed & (FIRST << 2)) !== 0;
        fact.best = (packed & (BEST << 2)) !== 0;
        fact.failedMask = packed >> 4;
        fact.finishedAt = r[6];
        fact.groupFirstAt = r[7];
        fact.durationS = r[8];
        fact.gpuSeconds = r[9];
        builder.add(fact);
    }
    return builder.build();
}
/** Per agent × task × verdict counts of the counted attempts, by one SQL GROUP BY; sorted by agent, task, verdict. */
function scorecardRows(db, filter) {
    const w = where(filter, "counted");
    return db
        .prepare(`SELECT agent, task, verdict, COUNT(*) AS count FROM scorecard_rows ${w.sql}
       GROUP BY agent, task, verdict ORDER BY COALESCE(agent, ''), task, verdict`)
        .all(...w.params);
}
const categoriesOf = (mask) => probe_check/* CATEGORIES */.R6.filter((_, i) => mask & (1 << i));
/**
 * The latest `limit` counted attempts of each of `agents` (null: PRs without an agent), newest
 * first, with what a drill-down links to: the PR, the commit, the evaluator's run.
 */
function recentEvaluations(db, filter, agents, limit) {
    const w = where(filter, "counted", "s.");
    const sql = `SELECT s.agent, s.owner, s.repo, s.pr, s.task, s.verdict, s.attempt, s.finished_at, s.counted, s.failed_mask, s.duration_s,
      s.evaluation_key, e.head_sha, e.run_url
    FROM scorecard_rows s JOIN evaluations e ON e.key = s.evaluation_key
    ${w.sql ? `${w.sql} AND` : "WHERE"} s.agent IS ?
    ORDER BY s.finished_at DESC, s.id DESC LIMIT ?`;
    const stmt = db.prepare(sql);
    const out = new Map();
    for (const agent of agents) {
        const rows = stmt.all(...w.params, agent, limit);
        out.set(agent, rows.map((r) => ({
            agent: r.agent, owner: r.owner, repo: r.repo, pr: r.pr, task: r.task, verdict: r.verdict, attempt: r.attempt,
            finishedAt: new Date(r.finished_at).toISOString(), first: (r.counted & FIRST) !== 0, best: (r.counted & BEST) !== 0,
            failedCategories: categoriesOf(r.failed_mask), durationS: r.duration_s, headSha: r.head_sha, evaluationKey: r.evaluation_key, runUrl: r.run_url,
        })));
    }
    return out;
}
/** A store's scorecard and each agent's newest counted evaluations: what a page shows. */
function scorecardView(db, filter, limit = DRILLDOWN_LIMIT) {
    const card = scorecardOf(db, filter);
    const agents = card.agents.map((a) => (a.agent === NO_AGENT ? null : a.agent));
    return { card, drill: recentEvaluations(db, filter, agents, limit) };
}

// EXTERNAL MODULE: ./src/core/result.ts
var result = __webpack_require__(9294);
// EXTERNAL MODULE: ./src/core/result-signature.ts + 1 modules
var result_signature = __webpack_require__(4670);
;// CONCATENATED MODULE: ./src/cli/results-folder.ts






/** A result document is a few hundred kB at most; anything far larger is not one of ours. */
const MAX_BYTES = 8 * 1024 * 1024;
/** Every `*.json` under `dir` (depth-first, sorted), sidecars apart. */
function jsonFiles(dir) {
    const out = [];
    const walk = (d) => {
        for (const name of (0,external_node_fs_.readdirSync)(d).sort()) {
            const p = (0,external_node_path_.join)(d, name);
            const st = (0,external_node_fs_.statSync)(p);
            if (st.isDirectory())
                walk(p);
            else if (st.isFile() && name.endsWith(".json") && !name.endsWith(CONTEXT_SUFFIX))
                out.push(p);
        }
    };
    walk(dir);
    return out;
}
/** The sidecar of a result file, if there is one; a broken sidecar is a problem of the result file. */
function readContext(file) {
    const side = `${file.slice(0, -".json".length)}${CONTEXT_SUFFIX}`;
    let text;
    try {
        text = (0,external_node_fs_.readFileSync)(side, "utf8");
    }
    catch {
        return { ok: true, context: null };
    }
    let json;
    try {
        json = JSON.parse(text);
    }
    catch (e) {
        return { ok: false, why: `its sidecar ${side} is not JSON (${e.message})` };
    }
    const parsed = ResultContextSchema.safeParse(json);
    if (!parsed.success) {
        const i = parsed.error.issues[0];
        return { ok: false, why: `its sidecar ${side}: \`${i?.path.join(".") || "(document)"}\` ${i?.message ?? "is invalid"}` };
    }
    return { ok: true, context: parsed.data };
}
/**
 * Reads every result file under `dir` for a scorecard, as leniently as `probegate verify` (a newer
 * Action's extra fields are accepted; a newer schema version is not). With `key`, only results
 * signed with it count. Each file that cannot count is returned with its path and why, never
 * dropped silently. `onProgress` is told how far it got (a folder can hold thousands of files).
 */
function readResultsFolder(dir, opts = {}) {
    let st;
    try {
        st = (0,external_node_fs_.statSync)(dir);
    }
    catch {
        throw new errors/* InputError */.d(`--results ${dir}: no such folder.`, { field: "--results" });
    }
    if (!st.isDirectory())
        throw new errors/* InputError */.d(`--results ${dir}: not a folder (give the folder the result files were downloaded to).`, { field: "--results" });
    const paths = jsonFiles(dir);
    const files = [];
    const skipped = [];
    paths.forEach((p, i) => {
        const file = (0,external_node_path_.relative)(process.cwd(), p) || p;
        const skip = (why) => skipped.push({ file, why });
        if (i % 500 === 499)
            opts.onProgress?.(i + 1, paths.length);
        if ((0,external_node_fs_.statSync)(p).size > MAX_BYTES)
            return skip(`larger than ${MAX_BYTES} bytes: not a result file`);
        let json;
        try {
            json = JSON.parse((0,external_node_fs_.readFileSync)(p, "utf8"));
        }
        catch (e) {
            return skip(`not JSON (${e.message})`);
        }
        const read = (0,result/* readResult */.Uv)(json);
        if (!read.ok)
            return skip(read.problem);
        if (opts.key) {
            // Over the document as written: fields a newer probegate added are signed too.
            const v = (0,result_signature/* verifyResult */.rP)(json, opts.key);
            if (!v.ok)
                return skip(`${v.why}; only results signed with the given key count`);
        }
        const ctx = readContext(p);
        if (!ctx.ok)
            return skip(ctx.why);
        files.push({ file, result: read.result, context: ctx.context });
    });
    if (paths.length >= 500)
        opts.onProgress?.(paths.length, paths.length);
    return { files, skipped };
}

;// CONCATENATED MODULE: ./src/cli/scorecard-command.ts














function fromStore(flags, filter) {
    const file = (0,external_node_path_.resolve)(flags.db ?? process.env.PROBEGATE_DB ?? "probegate.sqlite");
    if (!(0,external_node_fs_.existsSync)(file)) {
        throw new errors/* InputError */.d(`no store at ${file}: point --db (or $PROBEGATE_DB) at the probegate app's SQLite file, or --results at a folder of result files.`, { file, field: "--db" });
    }
    let db;
    try {
        db = (0,store_db/* openStore */.Ch)(file);
    }
    catch (e) {
        throw new errors/* InputError */.d(`${file}: not a probegate store (${e.message}).`, { file });
    }
    try {
        return { ...scorecardView(db, filter), scope: scopeOf(filter), skipped: [] };
    }
    finally {
        db.close();
    }
}
function fromResults(flags, filter, io) {
    const dir = flags.results;
    const keyName = flags.keyEnv ?? "PROBEGATE_SIGNING_KEY";
    const key = process.env[keyName];
    if (flags.keyEnv && !key)
        throw new errors/* InputError */.d(`--key-env ${keyName}: that variable is not set, so no signature can be checked.`, { field: "--key-env" });
    const read = readResultsFolder(dir, { key, onProgress: (n, total) => io.stderr(`read ${n}/${total} result files\n`) });
    const probeSet = filter.probeSet;
    const { facts, lines, skipped } = factsOfResults(probeSet ? read.files.filter((f) => judgedByProbeSet(f.result, probeSet)) : read.files);
    const inScope = (l) => !filter.owner || (l.owner === filter.owner && (!filter.repo || l.repo === filter.repo));
    const since = filter.since?.getTime();
    const keep = facts.map((f, i) => inScope(lines[i]));
    const card = buildScorecard(facts.filter((_, i) => keep[i]), filter.basis, filter.since);
    const counted = lines.filter((l, i) => keep[i] && isCounted(facts[i], filter.basis, since));
    const all = [...read.skipped, ...skipped];
    const signed = key ? `, signatures checked with $${keyName}` : ", signatures not checked (no key given)";
    io.stderr(`${read.files.length} result file(s) read from ${dir}${signed}; ${all.length} left out${all.length ? ":" : ""}\n`);
    for (const s of all)
        io.stderr(`  ✗ ${s.file}: ${s.why}\n`);
    return { card, drill: latestPerAgent(counted), scope: `${scopeOf(filter)} in ${dir}`, skipped: all };
}
function terminalTable(card) {
    const t = new (cli_table3_default())({ head: RANKING_HEAD, style: { head: [], border: [] }, chars: { mid: "", "left-mid": "", "mid-mid": "", "right-mid": "" } });
    for (const a of [...card.agents, card.total])
        t.push(rankingCells(a));
    return t.toString();
}
/**
 * `probegate scorecard`: how each agent does, from the app's store (`--db`) or from a folder of
 * result files (`--results`, for teams with only the Action). Tables on the terminal, JSON or
 * markdown for tools and job summaries, a self-contained HTML page with charts (`--format html`).
 * Files of a results folder that cannot count are listed with why; `--strict` then exits 1.
 */
function scorecardCommand(flags, io, now = new Date()) {
    if (flags.db && flags.results)
        throw new errors/* InputError */.d("--db and --results: give one source, the app's store or a folder of result files.", { field: "--results" });
    const parsed = parseScorecardFilter(flags);
    if (!parsed.ok)
        throw new errors/* InputError */.d(`--${parsed.field} ${parsed.message}.`, { field: `--${parsed.field}` });
    const filter = parsed.filter;
    const s = flags.results ? fromResults(flags, filter, io) : fromStore(flags, filter);
    let text;
    switch (flags.format) {
        case "json":
            text = `${JSON.stringify({ scope: s.scope, ...s.card, skipped: s.skipped }, null, 2)}\n`;
            break;
        case "markdown":
            text = `${renderScorecardMarkdown(s.card, { scope: s.scope, skipped: s.skipped })}\n`;
            break;
        case "html": {
            let chartJs;
            try {
                chartJs = chartJsSource();
            }
            catch (e) {
                if (e instanceof ChartLibraryMissingError)
                    throw new errors/* InputError */.d(`${e.message}; --format table, markdown or json work without it.`);
                throw e;
            }
            const serverUrl = flags.serverUrl ?? process.env.GITHUB_SERVER_URL ?? "https://github.com";
            text = renderScorecardHtml(s.card, { chartJs, title: "probegate scorecard", generatedAt: now.toISOString(), scope: s.scope, drill: s.drill, serverUrl, skipped: s.skipped });
            break;
        }
        default: {
            const t = s.card.total.figures;
            text = `${s.scope}: ${t.evaluations} evaluations; probes rejected ${formatRate(t.probeRejection)} of official-test passes\n${terminalTable(s.card)}\n`;
        }
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
    return flags.strict && s.skipped.length ? 1 : 0;
}


/***/ })

};
