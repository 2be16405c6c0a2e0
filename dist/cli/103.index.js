export const id = 103;
export const ids = [103];
export const modules = {

/***/ 103:
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {

__webpack_require__.r(__webpack_exports__);
/* harmony export */ __webpack_require__.d(__webpack_exports__, {
/* harmony export */   openPowerStore: () => (/* binding */ openPowerStore),
/* harmony export */   quarantinedNow: () => (/* binding */ quarantinedNow),
/* harmony export */   recordRun: () => (/* binding */ recordRun)
/* harmony export */ });
/* harmony import */ var node_path__WEBPACK_IMPORTED_MODULE_0__ = __webpack_require__(6760);
/* harmony import */ var node_path__WEBPACK_IMPORTED_MODULE_0___default = /*#__PURE__*/__webpack_require__.n(node_path__WEBPACK_IMPORTED_MODULE_0__);
/* harmony import */ var _store_db_js__WEBPACK_IMPORTED_MODULE_1__ = __webpack_require__(664);
/* harmony import */ var _store_probe_health_js__WEBPACK_IMPORTED_MODULE_2__ = __webpack_require__(8042);



/** Opens (creating if needed) the store that keeps known-good outcomes: usually the app's own. */
function openPowerStore(file) {
    return (0,_store_db_js__WEBPACK_IMPORTED_MODULE_1__/* .openStore */ .Ch)((0,node_path__WEBPACK_IMPORTED_MODULE_0__.resolve)(file));
}
/** Records one run of a correct example as known-good outcomes of every check it ran. */
function recordRun(db, r) {
    const submission = `${(0,node_path__WEBPACK_IMPORTED_MODULE_0__.basename)(r.example.patch)}${r.runs > 1 ? ` run ${r.run + 1}/${r.runs}` : ""}`;
    (0,_store_probe_health_js__WEBPACK_IMPORTED_MODULE_2__/* .recordKnownGoodOutcomes */ .t7)(db, { task: r.task.spec.id, probeSet: r.result.task.probeSet, submission, source: "validate --power", at: new Date() }, r.result.probes);
}
/** The task's checks quarantined now for this probe set. */
function quarantinedNow(db, task, probeSet) {
    return (0,_store_probe_health_js__WEBPACK_IMPORTED_MODULE_2__/* .quarantinedChecksOf */ .Tm)(db, { task, probeSet });
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
