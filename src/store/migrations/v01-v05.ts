import type { Migration } from "./index.js";

/** Migrations 1–5: evaluations, attempts, deliveries, the check-run outbox, scorecard rows. */
export const SCHEMA_1_TO_5: ReadonlyArray<Migration> = [
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
