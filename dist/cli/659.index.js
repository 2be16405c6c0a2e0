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
// EXTERNAL MODULE: ./src/core/check-run-render.ts
var check_run_render = __webpack_require__(1088);
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
function renderCheckRunWithQuarantine(result, quarantined) {
    const plain = (0,check_run_render/* renderCheckRun */.kL)(result);
    const reading = (0,quarantine/* readWithQuarantine */.JE)(result, quarantined);
    if (reading.warnings.length === 0)
        return { output: plain, verdict: result.verdict };
    const section = [
        `> ⚠️ **${reading.warnings.length} failure${reading.warnings.length === 1 ? "" : "s"} of quarantined checks set aside.** A check that failed known-good submissions more than once in its last ${quarantine/* QUARANTINE_WINDOW */.IG} outcomes on this probe set is quarantined: its failures are warnings, not rejections, until the probe set changes.` +
            (reading.changed ? ` probegate reads this result as **${reading.verdict}**; the signed result says ${result.verdict}.` : ""),
        "",
        "| Quarantined check | Category | Status here | Failed on known-good | What was found |",
        "|---|---|---|---:|---|",
        ...reading.warnings.map((w) => `| \`${w.probe.id}\` | ${w.probe.category} | ${w.probe.status} | ${w.quarantine.failures} of last ${w.quarantine.window} | ${(0,check_run_render/* cell */.Hn)(w.probe.message)} |`),
        "",
    ].join("\n");
    const setAside = new Set(reading.warnings.map((w) => w.probe));
    const annotations = [
        ...(0,check_run_render/* renderAnnotations */.Hp)({ ...result, probes: result.probes.filter((p) => !setAside.has(p)) }),
        ...reading.warnings.flatMap(({ probe: p, quarantine: q }) => {
            if (!p.location)
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
    const summary = `${section}\n${(0,check_run_render/* renderSummary */.Br)(result, check_run_render/* SUMMARY_LIMIT */.Jt - section.length - 1)}`;
    return { output: { conclusion: (0,check_run_render/* conclusionFor */.H1)(reading.verdict), title, summary, annotations }, verdict: reading.verdict };
}

// EXTERNAL MODULE: ./src/store/db.ts + 1 modules
var store_db = __webpack_require__(9174);
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


/***/ })

};
