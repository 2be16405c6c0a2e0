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
