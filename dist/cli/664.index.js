export const id = 664;
export const ids = [664];
export const modules = {

/***/ 3606:
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {

/* harmony export */ __webpack_require__.d(__webpack_exports__, {
/* harmony export */   C_: () => (/* binding */ EXACT_LIMIT),
/* harmony export */   SC: () => (/* binding */ BUCKETS),
/* harmony export */   jv: () => (/* binding */ FLOOR),
/* harmony export */   ll: () => (/* binding */ MedianSketch)
/* harmony export */ });
/* unused harmony exports STEP, bucketOf */
/** Values kept exactly before a sketch switches to buckets. */
const EXACT_LIMIT = 2048;
/** Bucket width, relative: a bucketed median is within ±0.5% of the true one. */
const STEP = Math.log(1.01);
/** Values under this share bucket 0. */
const FLOOR = 1e-3;
/** How many buckets a sketch has (values over 1e7 share the last). */
const BUCKETS = Math.ceil(Math.log(1e7 / FLOOR) / STEP) + 2;
/**
 * The median of a stream of non-negative figures (seconds, minutes) in bounded memory, because a
 * scorecard keeps one per agent × repository / task / area / week and sees a million evaluations.
 * Exact while it holds at most EXACT_LIMIT values; past that, log-spaced buckets 1% wide (values
 * under 1 ms share the first bucket), so the median is within ±0.5% and `exact` says so.
 */
class MedianSketch {
    exactValues = new Float64Array(16);
    buckets = null;
    size = 0;
    get count() {
        return this.size;
    }
    /** Whether `median()` is the exact median (no more than EXACT_LIMIT values seen). */
    get exact() {
        return this.buckets === null;
    }
    add(x) {
        if (!(x >= 0) || !Number.isFinite(x))
            return;
        if (this.exactValues) {
            if (this.size === EXACT_LIMIT)
                this.toBuckets();
            else {
                if (this.size === this.exactValues.length) {
                    const grown = new Float64Array(Math.min(EXACT_LIMIT, this.size * 2));
                    grown.set(this.exactValues);
                    this.exactValues = grown;
                }
                this.exactValues[this.size++] = x;
                return;
            }
        }
        this.buckets[bucketOf(x)] += 1;
        this.size += 1;
    }
    /**
     * Adds `n` values known only by their bucket (bucketOf): how the store hands over a slice's
     * durations from its pre-counted histogram. The sketch is bucketed from then on, so callers use
     * it only for more than EXACT_LIMIT values, where `add` would have bucketed them too.
     */
    addToBucket(bucket, n) {
        if (!Number.isInteger(bucket) || bucket < 0 || bucket >= BUCKETS)
            throw new RangeError(`MedianSketch bucket ${bucket}: expected 0..${BUCKETS - 1}`);
        if (this.exactValues)
            this.toBuckets();
        this.buckets[bucket] += n;
        this.size += n;
    }
    toBuckets() {
        const b = new Uint32Array(BUCKETS);
        for (const v of this.exactValues.subarray(0, this.size))
            b[bucketOf(v)] += 1;
        this.buckets = b;
        this.exactValues = null;
    }
    /** The median (mean of the two middle values for an even count); null when nothing was added. */
    median() {
        if (this.size === 0)
            return null;
        if (this.exactValues) {
            const sorted = this.exactValues.slice(0, this.size).sort();
            const mid = this.size >> 1;
            return this.size % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
        }
        const b = this.buckets;
        const half = this.size / 2;
        let seen = 0;
        for (let i = 0; i < b.length; i++) {
            seen += b[i];
            if (seen >= half)
                return i === 0 ? FLOOR / 2 : FLOOR * Math.exp((i - 0.5) * STEP);
        }
        return null;
    }
}
/** The bucket of a (finite, non-negative) value; the store's histogram computes the same in SQL. */
function bucketOf(x) {
    if (x < FLOOR)
        return 0;
    return Math.min(BUCKETS - 1, 1 + Math.floor(Math.log(x / FLOOR) / STEP));
}


/***/ }),

/***/ 664:
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {


// EXPORTS
__webpack_require__.d(__webpack_exports__, {
  Ch: () => (/* binding */ openStore),
  CZ: () => (/* binding */ schemaVersion)
});

// UNUSED EXPORTS: StoreError, migrate

// EXTERNAL MODULE: ./node_modules/better-sqlite3/lib/index.js
var lib = __webpack_require__(4918);
var lib_default = /*#__PURE__*/__webpack_require__.n(lib);
;// CONCATENATED MODULE: ./src/store/migrations/v01-v05.ts
/** Migrations 1–5: evaluations, attempts, deliveries, the check-run outbox, scorecard rows. */
const SCHEMA_1_TO_5 = [
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
];

// EXTERNAL MODULE: ./src/core/median-sketch.ts
var median_sketch = __webpack_require__(3606);
// EXTERNAL MODULE: ./src/core/probe-check.ts
var probe_check = __webpack_require__(6448);
;// CONCATENATED MODULE: ./src/store/migrations/scorecard-cells.ts


/**
 * Migration 7's SQL: pre-counted scorecard cells, kept by triggers on scorecard_rows, so a scorecard
 * of a million attempts folds a few thousand rows instead of crossing every attempt into JS.
 *
 * `scorecard_cells`: per (agent, owner, repo, task, area, week, first/best flags) the attempts, their
 * verdicts, failed categories, timed attempts and GPU seconds: every figure but medians.
 * `scorecard_durations`: per (dimension, agent, key, duration bucket, flags) how many attempts took
 * that long, on MedianSketch's buckets (1% wide), for the slices past MedianSketch.EXACT_LIMIT
 * durations, whose median today's sketch already takes from those buckets. (Smaller slices read
 * their exact durations through the indexes below.) Dimensions: 1 repository, 2 task, 3 area, 4 week;
 * an agent's overall histogram is the sum of its repository ones. Keys that may be NULL (agent,
 * area, repository label) are stored json_quote'd so the primary keys hold no NULL.
 *
 * Triggers follow scorecard_rows (which migration 5's triggers keep), for INSERT, DELETE and any
 * UPDATE of a column the cells read; an update subtracts the old row and adds the new one.
 * The week index is floor((finished_at - 1970-01-05) / 1 week), as the core's weekOf. The bucket is
 * computed with SQLite's ln(), which agrees with V8's Math.log except within an ulp or so of a bucket
 * edge (test/store/scorecard-cells.test.ts measures it).
 */
const WEEK = (r) => `((${r}.finished_at - 345600000) / 604800000 - ((${r}.finished_at - 345600000) % 604800000 < 0))`;
const VALID = (r) => `(${r}.duration_s >= 0 AND ${r}.duration_s < 9e999)`;
const BUCKET = (r) => `(CASE WHEN ${r}.duration_s < ${median_sketch/* FLOOR */.jv} THEN 0 ELSE min(${median_sketch/* BUCKETS */.SC - 1}, 1 + CAST(floor(ln(${r}.duration_s / ${median_sketch/* FLOOR */.jv}) / ln(1.01)) AS INTEGER)) END)`;
const REPO_LABEL = (r) => `(CASE WHEN ${r}.owner = '' OR ${r}.repo = '' THEN NULL ELSE ${r}.owner || '/' || ${r}.repo END)`;
const CAT_COLS = probe_check/* CATEGORIES */.R6.map((_, i) => `cat${i}`);
const SUM_COLS = ["n", "resolved", "rejected", "official_failed", "errors", ...CAT_COLS, "timed", "gpu"];
const KEY_COLS = ["agent_j", "owner", "repo", "task", "area_j", "wk", "flags"];
/** One row's contribution to its cell, times `sign`. */
function cellValues(r, sign) {
    const s = (e) => (sign === 1 ? `(${e})` : `-(${e})`);
    return [
        `json_quote(${r}.agent)`, `${r}.owner`, `${r}.repo`, `${r}.task`, `json_quote(${r}.area)`, WEEK(r), `${r}.counted`,
        s("1"), s(`${r}.verdict_rank = 3`), s(`${r}.verdict_rank = 2`), s(`${r}.verdict_rank = 1`), s(`${r}.verdict_rank = 0`),
        ...probe_check/* CATEGORIES */.R6.map((_, i) => s(`(${r}.failed_mask >> ${i}) & 1`)),
        s(`COALESCE(${VALID(r)}, 0)`), s(`COALESCE(${r}.gpu_seconds, 0.0)`),
    ];
}
const cellUpsert = (r, sign) => `
    INSERT INTO scorecard_cells (${[...KEY_COLS, ...SUM_COLS].join(", ")}) VALUES (${cellValues(r, sign).join(", ")})
      ON CONFLICT DO UPDATE SET ${SUM_COLS.map((c) => `${c} = ${c} + excluded.${c}`).join(", ")};`;
const durationUpsert = (r, sign) => `
    INSERT INTO scorecard_durations (dim, agent_j, key_j, bucket, flags, n) VALUES
        ${[REPO_LABEL(r), `${r}.task`, `${r}.area`, WEEK(r)].map((k, i) => `(${i + 1}, json_quote(${r}.agent), json_quote(${k}), ${BUCKET(r)}, ${r}.counted, ${sign})`).join(",\n        ")}
      ON CONFLICT DO UPDATE SET n = n + excluded.n;`;
/** Columns whose change moves a row to another cell or changes what it adds. */
const CELL_COLS = ["agent", "owner", "repo", "task", "area", "finished_at", "counted", "verdict_rank", "failed_mask", "duration_s", "gpu_seconds"];
const DURATION_COLS = ["agent", "owner", "repo", "task", "area", "finished_at", "counted", "duration_s"];
const changed = (cols) => cols.map((c) => `OLD.${c} IS NOT NEW.${c}`).join(" OR ");
const SCORECARD_CELLS_SQL = `
  CREATE TABLE scorecard_cells (
    agent_j TEXT NOT NULL, owner TEXT NOT NULL, repo TEXT NOT NULL, task TEXT NOT NULL, area_j TEXT NOT NULL, wk INTEGER NOT NULL, flags INTEGER NOT NULL,
    n INTEGER NOT NULL, resolved INTEGER NOT NULL, rejected INTEGER NOT NULL, official_failed INTEGER NOT NULL, errors INTEGER NOT NULL,
    ${CAT_COLS.map((c) => `${c} INTEGER NOT NULL`).join(", ")}, timed INTEGER NOT NULL, gpu REAL NOT NULL,
    PRIMARY KEY (${KEY_COLS.join(", ")})
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE scorecard_durations (
    dim INTEGER NOT NULL, agent_j TEXT NOT NULL, key_j TEXT NOT NULL, bucket INTEGER NOT NULL, flags INTEGER NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (dim, agent_j, key_j, bucket, flags)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX scorecard_rows_agent_task ON scorecard_rows (agent, task);
  CREATE INDEX scorecard_rows_agent_repo ON scorecard_rows (agent, owner, repo);
  CREATE INDEX scorecard_rows_agent_area ON scorecard_rows (agent, area);

  INSERT INTO scorecard_cells (${[...KEY_COLS, ...SUM_COLS].join(", ")})
    SELECT ${KEY_COLS.join(", ")}, ${SUM_COLS.map((c) => `SUM(${c})`).join(", ")}
    FROM (SELECT ${cellValues("r", 1).map((e, i) => `${e} AS ${[...KEY_COLS, ...SUM_COLS][i]}`).join(", ")} FROM scorecard_rows r)
    GROUP BY ${KEY_COLS.join(", ")};
  INSERT INTO scorecard_durations (dim, agent_j, key_j, bucket, flags, n)
    SELECT d.dim, json_quote(r.agent), json_quote(CASE d.dim WHEN 1 THEN ${REPO_LABEL("r")} WHEN 2 THEN r.task WHEN 3 THEN r.area ELSE ${WEEK("r")} END),
        ${BUCKET("r")}, r.counted, COUNT(*)
      FROM scorecard_rows r, (SELECT 1 AS dim UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4) d
      WHERE ${VALID("r")}
      GROUP BY 1, 2, 3, 4, 5;

  CREATE TRIGGER scorecard_cells_insert AFTER INSERT ON scorecard_rows BEGIN${cellUpsert("NEW", 1)}
  END;
  CREATE TRIGGER scorecard_cells_delete AFTER DELETE ON scorecard_rows BEGIN${cellUpsert("OLD", -1)}
  END;
  CREATE TRIGGER scorecard_cells_update AFTER UPDATE ON scorecard_rows WHEN ${changed(CELL_COLS)} BEGIN${cellUpsert("OLD", -1)}${cellUpsert("NEW", 1)}
  END;
  CREATE TRIGGER scorecard_durations_insert AFTER INSERT ON scorecard_rows WHEN ${VALID("NEW")} BEGIN${durationUpsert("NEW", 1)}
  END;
  CREATE TRIGGER scorecard_durations_delete AFTER DELETE ON scorecard_rows WHEN ${VALID("OLD")} BEGIN${durationUpsert("OLD", -1)}
  END;
  CREATE TRIGGER scorecard_durations_update_old AFTER UPDATE ON scorecard_rows WHEN ${VALID("OLD")} AND (${changed(DURATION_COLS)}) BEGIN${durationUpsert("OLD", -1)}
  END;
  CREATE TRIGGER scorecard_durations_update_new AFTER UPDATE ON scorecard_rows WHEN ${VALID("NEW")} AND (${changed(DURATION_COLS)}) BEGIN${durationUpsert("NEW", 1)}
  END;
`;

;// CONCATENATED MODULE: ./src/store/migrations/v06-on.ts

/** Migrations 6 on: quarantine, and what later waves added. Append the next number at the end. */
const SCHEMA_6_ON = [
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
    {
        version: 7,
        name: "scorecard cells: pre-counted figures and duration histograms, kept by triggers on scorecard_rows",
        sql: SCORECARD_CELLS_SQL,
    },
    {
        version: 8,
        name: "deployment: evaluation policy, budget rounds, deferral, reconciliation, runner, gate trees",
        // policy: the repository's rules for this evaluation, decided at queue time (JSON: whether an
        //   unsandboxed result is accepted and why, how much of the probes agent PRs see).
        // deferred_until: a head over the PR's evaluation budget waits, queued, until then.
        // reconciled_at: when the sweep last asked GitHub about the evaluator run (a webhook may be lost).
        // pr_evaluation_rounds: one row per PR head whose evaluation was started, for the budget.
        // gates.conclusion / tree_sha: a passed gate's tree, so a merge group holding it needs no new run.
        sql: `
      ALTER TABLE evaluations ADD COLUMN policy TEXT;
      ALTER TABLE evaluations ADD COLUMN deferred_until INTEGER;
      ALTER TABLE evaluations ADD COLUMN reconciled_at INTEGER;
      ALTER TABLE evaluations ADD COLUMN runner TEXT;
      CREATE TABLE pr_evaluation_rounds (
        owner TEXT NOT NULL,
        repo TEXT NOT NULL,
        pr INTEGER NOT NULL,
        head_sha TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (owner, repo, pr, head_sha)
      ) STRICT;
      CREATE INDEX pr_evaluation_rounds_at ON pr_evaluation_rounds (owner, repo, pr, at);
      ALTER TABLE gates ADD COLUMN conclusion TEXT;
      ALTER TABLE gates ADD COLUMN tree_sha TEXT;
      CREATE INDEX gates_tree ON gates (owner, repo, tree_sha) WHERE tree_sha IS NOT NULL;
    `,
    },
    {
        version: 9,
        name: "probe-set versions of each finished attempt: the probe folder's hash, the evaluator and probes commits run",
        sql: `
      ALTER TABLE attempt_results ADD COLUMN probe_set_hash TEXT;
      ALTER TABLE attempt_results ADD COLUMN evaluator_commit TEXT;
      ALTER TABLE attempt_results ADD COLUMN probes_commit TEXT;
    `,
    },
    {
        version: 10,
        name: "deliveries: when handling finished, so a delivery whose handler died can be taken again; redelivery requests; check-run outbox",
        // Rows from before: their handlers ran to the end or failed (and were forgotten), so handled.
        // redelivery_asks: when the app last asked GitHub to redeliver a delivery, and how often, so
        // no two sweeps (of one process or several) ask for the same one at once.
        sql: `
      ALTER TABLE deliveries ADD COLUMN handled_at INTEGER;
      UPDATE deliveries SET handled_at = received_at;
      CREATE TABLE redelivery_asks (
        guid TEXT PRIMARY KEY,
        asked_at INTEGER NOT NULL,
        asks INTEGER NOT NULL DEFAULT 1
      ) STRICT;
      CREATE TABLE check_run_outbox (
        key TEXT PRIMARY KEY REFERENCES evaluations (key),
        owner TEXT NOT NULL,
        repo TEXT NOT NULL,
        check_run_id INTEGER NOT NULL,
        output TEXT NOT NULL,
        extra TEXT NOT NULL,
        since INTEGER NOT NULL
      ) STRICT;
    `,
    },
    {
        version: 11,
        name: "acceptances: a person's acceptance of a measured difference (a failed check) for one head",
        // The signed result is never changed: who accepted which check of which attempt, and why, is
        // kept here, and the check run, the gate and the scorecards read it beside the verdict.
        sql: `
      CREATE TABLE acceptances (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        evaluation_key TEXT NOT NULL REFERENCES evaluations (key),
        attempt INTEGER NOT NULL,
        head_sha TEXT NOT NULL,
        check_id TEXT NOT NULL,
        accepted_by TEXT NOT NULL,
        reason TEXT NOT NULL,
        comment_id INTEGER,
        accepted_at INTEGER NOT NULL,
        UNIQUE (evaluation_key, attempt, check_id)
      ) STRICT;
    `,
    },
    {
        version: 12,
        name: "evaluations: the PR's base commit, sent with every dispatch (a repository gate compares the head with it)",
        // Rows from before have none: the app fills it in from the PR's next event, and a resumed
        // attempt without one asks GitHub for the PR's base (src/app/sweep.ts).
        sql: `
      ALTER TABLE evaluations ADD COLUMN base_sha TEXT;
    `,
    },
];

;// CONCATENATED MODULE: ./src/store/migrations/index.ts


/** Every migration, in order; db.ts applies those a store has not seen. */
const MIGRATIONS = [...SCHEMA_1_TO_5, ...SCHEMA_6_ON];

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


/***/ })

};
