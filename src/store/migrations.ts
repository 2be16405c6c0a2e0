import { SCORECARD_CELLS_SQL } from "./migration-scorecard-cells.js";

/**
 * The store's schema, as numbered migrations. A migration is never edited once shipped: change the
 * schema by appending the next number. Times are milliseconds since the epoch (UTC).
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * The migration rebuilds a table that others reference (SQLite cannot change a CHECK in place):
   * it runs with foreign keys off, as SQLite's documented procedure asks, and must leave no
   * dangling reference (`PRAGMA foreign_key_check` is run before it commits).
   */
  rebuildsTables?: boolean;
}

export const MIGRATIONS: ReadonlyArray<Migration> = [
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
