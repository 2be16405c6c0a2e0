export const id = 659;
export const ids = [659];
export const modules = {

/***/ 1659:
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {

// ESM COMPAT FLAG
__webpack_require__.r(__webpack_exports__);

// EXPORTS
__webpack_require__.d(__webpack_exports__, {
  readThroughStore: () => (/* binding */ readThroughStore)
});

// EXTERNAL MODULE: external "node:path"
var external_node_path_ = __webpack_require__(6760);
// EXTERNAL MODULE: ./src/core/check-run-render.ts + 1 modules
var check_run_render = __webpack_require__(6824);
// EXTERNAL MODULE: ./src/core/quarantine.ts
var quarantine = __webpack_require__(5659);
;// CONCATENATED MODULE: ./src/core/quarantine-check-run.ts


const VERDICT_TITLE = {
    resolved: "Passes official tests and hidden probes",
    "probe-rejected": "Rejected by hidden probes",
    error: "Evaluation error",
    "official-failed": "Official tests failed",
};
/**
 * The check run of a result read with quarantined checks set aside: their failures are warning
 * annotations and a section of the summary says which checks were quarantined and why; the
 * conclusion follows the reading. With no quarantined failure it is exactly `renderCheckRun`.
 */
function renderCheckRunWithQuarantine(result, quarantined, detail = "full") {
    const plain = (0,check_run_render/* renderCheckRun */.kL)(result, detail);
    const reading = (0,quarantine/* readWithQuarantine */.JE)(result, quarantined);
    if (reading.warnings.length === 0)
        return { output: plain, verdict: result.verdict };
    const section = [
        `> ⚠️ **${reading.warnings.length} failure${reading.warnings.length === 1 ? "" : "s"} of quarantined checks set aside.** A check that failed known-good submissions more than once in its last ${quarantine/* QUARANTINE_WINDOW */.IG} outcomes on this probe set is quarantined: its failures are warnings, not rejections, until the probe set changes.` +
            (reading.changed ? ` probegate reads this result as **${reading.verdict}**; the signed result says ${result.verdict}.` : ""),
        "",
        ...(detail === "full"
            ? [
                "| Quarantined check | Category | Status here | Failed on known-good | What was found |",
                "|---|---|---|---:|---|",
                ...reading.warnings.map((w) => `| \`${w.probe.id}\` | ${w.probe.category} | ${w.probe.status} | ${w.quarantine.failures} of last ${w.quarantine.window} | ${(0,check_run_render/* cell */.Hn)(w.probe.message)} |`),
            ]
            : ["| Quarantined category | Failures set aside |", "|---|---:|", ...[...new Set(reading.warnings.map((w) => w.probe.category))].map((c) => `| ${c} | ${reading.warnings.filter((w) => w.probe.category === c).length} |`)]),
        "",
    ].join("\n");
    const setAside = new Set(reading.warnings.map((w) => w.probe));
    const annotations = [
        ...(0,check_run_render/* renderAnnotations */.Hp)({ ...result, probes: result.probes.filter((p) => !setAside.has(p)) }, detail),
        ...reading.warnings.flatMap(({ probe: p, quarantine: q }) => {
            if (!p.location || detail !== "full")
                return [];
            const line = p.location.line ?? 1;
            const why = `quarantined: it failed ${q.failures} of its last ${q.window} outcomes on known-good submissions, so this is a warning, not a rejection`;
            return [{
                    path: p.location.path,
                    start_line: line,
                    end_line: line,
                    annotation_level: "warning",
                    title: `quarantined ${p.category} probe ${p.status}: ${p.id}`.slice(0, 255),
                    message: `${p.message || `hidden ${p.category} probe ${p.status}`}`.slice(0, 3800) + `\n\n(${why})`,
                }];
        }),
    ];
    const title = reading.changed ? `${VERDICT_TITLE[reading.verdict]} (${reading.warnings.length} quarantined check${reading.warnings.length === 1 ? "" : "s"} failed)` : plain.title;
    const summary = `${section}\n${(0,check_run_render/* renderSummary */.Br)(result, check_run_render/* SUMMARY_LIMIT */.Jt - section.length - 1, detail)}`;
    return { output: { conclusion: (0,check_run_render/* conclusionFor */.H1)(reading.verdict), title, summary, annotations }, verdict: reading.verdict };
}

// EXTERNAL MODULE: ./src/store/db.ts + 4 modules
var store_db = __webpack_require__(664);
// EXTERNAL MODULE: ./src/store/probe-health.ts
var probe_health = __webpack_require__(8042);
;// CONCATENATED MODULE: ./src/cli/eval-quarantine.ts




/**
 * `probegate eval --db`: reads the result as the app would, with the store's quarantined checks
 * set aside (printed as warnings), and with `--known-good` first records the run's outcomes as
 * those of a known-good submission (a canary run of the reference). The result file is not changed.
 */
function readThroughStore(file, result, opts, write) {
    const db = (0,store_db/* openStore */.Ch)((0,external_node_path_.resolve)(file));
    try {
        const at = { task: result.task.id, probeSet: result.task.probeSet };
        if (opts.knownGood) {
            (0,probe_health/* recordKnownGoodOutcomes */.t7)(db, { ...at, submission: (0,external_node_path_.basename)(opts.submission), source: "eval --known-good", at: new Date() }, result.probes);
            write(`recorded ${result.probes.length} checks of this run as known-good outcomes in ${file}\n`);
        }
        const quarantined = (0,probe_health/* quarantinedChecksOf */.Tm)(db, at);
        const { output, verdict } = renderCheckRunWithQuarantine(result, quarantined);
        if (quarantined.length)
            write(`quarantined checks of this probe set: ${quarantined.map((q) => `${q.check} (failed ${q.failures} of last ${q.window} known-good)`).join(", ")}\n`);
        if (verdict !== result.verdict)
            write(`read with quarantined failures set aside as warnings: ${verdict} (the result says ${result.verdict})\n`);
        return { verdict, markdown: output.summary };
    }
    finally {
        db.close();
    }
}


/***/ }),

/***/ 5659:
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {

/* harmony export */ __webpack_require__.d(__webpack_exports__, {
/* harmony export */   CX: () => (/* binding */ quarantinedChecks),
/* harmony export */   IG: () => (/* binding */ QUARANTINE_WINDOW),
/* harmony export */   JE: () => (/* binding */ readWithQuarantine)
/* harmony export */ });
/* unused harmony export QUARANTINE_MAX_FAILURES */
/* harmony import */ var _verdict_js__WEBPACK_IMPORTED_MODULE_0__ = __webpack_require__(9478);

/** How many of a check's latest outcomes on known-good submissions the rule looks at. */
const QUARANTINE_WINDOW = 20;
/** More failures than this in the window quarantine the check (PROBES.md: "more than 1 time in 20"). */
const QUARANTINE_MAX_FAILURES = 1;
/**
 * The quarantine rule: a check that failed (or errored on) a known-good submission more than
 * once in its latest 20 outcomes for the probe set is quarantined. The history is per probe set,
 * so a changed probe folder starts every check afresh.
 */
function quarantinedChecks(histories) {
    const out = [];
    for (const h of histories) {
        const recent = h.statuses.slice(0, QUARANTINE_WINDOW);
        const failures = recent.filter((s) => s === "failed" || s === "error").length;
        if (failures > QUARANTINE_MAX_FAILURES)
            out.push({ check: h.check, failures, window: recent.length });
    }
    return out.sort((a, b) => a.check.localeCompare(b.check));
}
/**
 * Reads a result with the quarantined checks' failures and errors set aside: they become warnings,
 * and the verdict is decided again from the other checks. Only a judgement the probes made is read
 * again (official tests passed, no harness error); the result itself is not changed, so its
 * signature still holds over what the evaluator said.
 */
function readWithQuarantine(result, quarantined) {
    const byId = new Map(quarantined.map((q) => [q.check, q]));
    const warnings = result.probes.flatMap((p) => {
        const q = byId.get(p.id);
        return q && (p.status === "failed" || p.status === "error") ? [{ probe: p, quarantine: q }] : [];
    });
    if (warnings.length === 0 || !result.official?.passed || result.error) {
        return { verdict: result.verdict, reason: result.reason, changed: false, warnings: result.official?.passed && !result.error ? warnings : [] };
    }
    const setAside = new Set(warnings.map((w) => w.probe));
    const again = (0,_verdict_js__WEBPACK_IMPORTED_MODULE_0__/* .decideVerdict */ .A)({ official: result.official, probes: result.probes.filter((p) => !setAside.has(p)) });
    const reason = `${again.reason}; ${warnings.length} failure${warnings.length === 1 ? "" : "s"} of quarantined checks set aside as warnings`;
    return { verdict: again.verdict, reason, changed: again.verdict !== result.verdict, warnings };
}


/***/ }),

/***/ 8042:
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {

/* harmony export */ __webpack_require__.d(__webpack_exports__, {
/* harmony export */   Tm: () => (/* binding */ quarantinedChecksOf),
/* harmony export */   t7: () => (/* binding */ recordKnownGoodOutcomes)
/* harmony export */ });
/* unused harmony export knownGoodHistories */
/* harmony import */ var _core_quarantine_js__WEBPACK_IMPORTED_MODULE_0__ = __webpack_require__(5659);

/**
 * Records every check of one evaluation of a known-good submission, passed or not: the quarantine
 * rule needs the passes too, to count failures among the latest outcomes.
 */
function recordKnownGoodOutcomes(db, run, checks) {
    const insert = db.prepare("INSERT INTO known_good_outcomes (task, probe_set, check_id, probe, status, submission, source, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    db.transaction(() => {
        for (const c of checks)
            insert.run(run.task, run.probeSet, c.id, c.probe, c.status, run.submission, run.source, run.at.getTime());
    })();
    return checks.length;
}
/** Each check's latest `window` outcomes on known-good submissions for one probe set, newest first. */
function knownGoodHistories(db, at, window = _core_quarantine_js__WEBPACK_IMPORTED_MODULE_0__/* .QUARANTINE_WINDOW */ .IG) {
    const rows = db
        .prepare(`SELECT check_id, status FROM (
         SELECT check_id, status, id, ROW_NUMBER() OVER (PARTITION BY check_id ORDER BY id DESC) AS n
         FROM known_good_outcomes WHERE task = ? AND probe_set = ?
       ) WHERE n <= ? ORDER BY check_id, id DESC`)
        .all(at.task, at.probeSet, window);
    const byCheck = new Map();
    for (const r of rows)
        byCheck.set(r.check_id, [...(byCheck.get(r.check_id) ?? []), r.status]);
    return [...byCheck].map(([check, statuses]) => ({ check, statuses }));
}
/** The checks of a task's probe set that are quarantined now (see `quarantinedChecks` for the rule). */
function quarantinedChecksOf(db, at) {
    return (0,_core_quarantine_js__WEBPACK_IMPORTED_MODULE_0__/* .quarantinedChecks */ .CX)(knownGoodHistories(db, at));
}


/***/ })

};
