export const id = 319;
export const ids = [319];
export const modules = {

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

/***/ 9174:
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {


// EXPORTS
__webpack_require__.d(__webpack_exports__, {
  Ch: () => (/* binding */ openStore)
});

// UNUSED EXPORTS: StoreError, migrate, schemaVersion

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
    {
        version: 5,
        name: "scorecard rows: one narrow row per finished attempt, kept by triggers",
        // A scorecard reads every finished attempt. Joining attempt_results to evaluations on the
        // 64-character key and probe_failures per attempt costs more than the figures themselves, so
        // each attempt gets one narrow row here with what the figures need: the group's first/best
        // flags ('counted': bit 0 first attempt, bit 1 best of N, as summarizeAttempts decides; ties
        // go to the row recorded first; the backfill records old rows in finishing order), when the group began, and failed probe categories as bits in
        // CATEGORIES order (1 structure, 2 state, 4 functional, 8 memory, 16 time, 32 traffic).
        // Triggers keep it in step with attempt_results and probe_failures, whoever writes them.
        sql: `
      ALTER TABLE attempt_results ADD COLUMN area TEXT;
      ALTER TABLE attempt_results ADD COLUMN duration_s REAL;
      ALTER TABLE attempt_results ADD COLUMN gpu_seconds REAL;

      CREATE TABLE scorecard_rows (
        id INTEGER PRIMARY KEY,
        grp TEXT NOT NULL,
        agent TEXT,
        owner TEXT NOT NULL,
        repo TEXT NOT NULL,
        pr INTEGER,
        task TEXT NOT NULL,
        area TEXT,
        verdict TEXT NOT NULL,
        verdict_rank INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        finished_at INTEGER NOT NULL,
        group_first_at INTEGER NOT NULL,
        counted INTEGER NOT NULL DEFAULT 0,
        failed_mask INTEGER NOT NULL DEFAULT 0,
        duration_s REAL,
        gpu_seconds REAL,
        evaluation_key TEXT NOT NULL,
        UNIQUE (evaluation_key, attempt)
      ) STRICT;
      CREATE INDEX scorecard_rows_grp ON scorecard_rows (grp);
      CREATE INDEX scorecard_rows_agent ON scorecard_rows (agent, finished_at);

      INSERT INTO scorecard_rows (evaluation_key, grp, agent, owner, repo, pr, task, area, verdict, verdict_rank, attempt, finished_at, group_first_at, failed_mask, duration_s, gpu_seconds)
        SELECT r.evaluation_key, CASE WHEN e.pr IS NULL THEN 'key:' || e.key ELSE json_array(e.owner, e.repo, e.pr, e.task) END,
          e.agent, e.owner, e.repo, e.pr, e.task, r.area, r.verdict,
          CASE r.verdict WHEN 'resolved' THEN 3 WHEN 'probe-rejected' THEN 2 WHEN 'official-failed' THEN 1 ELSE 0 END,
          r.attempt, r.finished_at, r.finished_at,
          COALESCE((SELECT SUM(DISTINCT CASE p.category WHEN 'structure' THEN 1 WHEN 'state' THEN 2 WHEN 'functional' THEN 4 WHEN 'memory' THEN 8 WHEN 'time' THEN 16 WHEN 'traffic' THEN 32 ELSE 0 END) FROM probe_failures p
                    WHERE p.evaluation_key = r.evaluation_key AND p.attempt = r.attempt AND p.status = 'failed'), 0),
          r.duration_s, r.gpu_seconds
        FROM attempt_results r JOIN evaluations e ON e.key = r.evaluation_key
        ORDER BY r.finished_at, r.attempt, r.evaluation_key;
      UPDATE scorecard_rows SET group_first_at = w.first_at, counted = w.flags
        FROM (SELECT id, MIN(finished_at) OVER (PARTITION BY grp) AS first_at,
                (ROW_NUMBER() OVER (PARTITION BY grp ORDER BY finished_at, attempt, id) = 1)
                | ((ROW_NUMBER() OVER (PARTITION BY grp ORDER BY verdict_rank DESC, finished_at, attempt, id) = 1) << 1) AS flags
              FROM scorecard_rows) AS w
        WHERE w.id = scorecard_rows.id;

      CREATE TRIGGER scorecard_rows_of_attempt AFTER INSERT ON attempt_results BEGIN
        INSERT INTO scorecard_rows (evaluation_key, grp, agent, owner, repo, pr, task, area, verdict, verdict_rank, attempt, finished_at, group_first_at, failed_mask, duration_s, gpu_seconds)
          SELECT NEW.evaluation_key, CASE WHEN e.pr IS NULL THEN 'key:' || e.key ELSE json_array(e.owner, e.repo, e.pr, e.task) END,
            e.agent, e.owner, e.repo, e.pr, e.task, NEW.area, NEW.verdict,
            CASE NEW.verdict WHEN 'resolved' THEN 3 WHEN 'probe-rejected' THEN 2 WHEN 'official-failed' THEN 1 ELSE 0 END,
            NEW.attempt, NEW.finished_at, NEW.finished_at,
            COALESCE((SELECT SUM(DISTINCT CASE p.category WHEN 'structure' THEN 1 WHEN 'state' THEN 2 WHEN 'functional' THEN 4 WHEN 'memory' THEN 8 WHEN 'time' THEN 16 WHEN 'traffic' THEN 32 ELSE 0 END) FROM probe_failures p
                      WHERE p.evaluation_key = NEW.evaluation_key AND p.attempt = NEW.attempt AND p.status = 'failed'), 0),
            NEW.duration_s, NEW.gpu_seconds
          FROM evaluations e WHERE e.key = NEW.evaluation_key;
        UPDATE scorecard_rows SET
            group_first_at = (SELECT MIN(g.finished_at) FROM scorecard_rows g WHERE g.grp = scorecard_rows.grp),
            counted = (id = (SELECT g.id FROM scorecard_rows g WHERE g.grp = scorecard_rows.grp ORDER BY g.finished_at, g.attempt, g.id LIMIT 1))
              | ((id = (SELECT g.id FROM scorecard_rows g WHERE g.grp = scorecard_rows.grp ORDER BY g.verdict_rank DESC, g.finished_at, g.attempt, g.id LIMIT 1)) << 1)
          WHERE grp = (SELECT n.grp FROM scorecard_rows n WHERE n.evaluation_key = NEW.evaluation_key AND n.attempt = NEW.attempt);
      END;

      CREATE TRIGGER scorecard_rows_of_probe_failure AFTER INSERT ON probe_failures WHEN NEW.status = 'failed' BEGIN
        UPDATE scorecard_rows SET failed_mask = failed_mask | CASE NEW.category WHEN 'structure' THEN 1 WHEN 'state' THEN 2 WHEN 'functional' THEN 4 WHEN 'memory' THEN 8 WHEN 'time' THEN 16 WHEN 'traffic' THEN 32 ELSE 0 END
          WHERE evaluation_key = NEW.evaluation_key AND attempt = NEW.attempt;
      END;
    `,
    },
    {
        version: 6,
        name: "probe outcomes on known-good submissions (quarantine)",
        sql: `
      CREATE TABLE known_good_outcomes (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        task TEXT NOT NULL,
        probe_set TEXT NOT NULL,
        check_id TEXT NOT NULL,
        probe TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('passed','failed','error','skipped')),
        submission TEXT NOT NULL,
        source TEXT NOT NULL,
        recorded_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX known_good_outcomes_check ON known_good_outcomes (task, probe_set, check_id, id);
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
