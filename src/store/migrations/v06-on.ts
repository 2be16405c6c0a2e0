import { SCORECARD_CELLS_SQL } from "./scorecard-cells.js";
import type { Migration } from "./index.js";

/** Migrations 6 on: quarantine, and what later waves added. Append the next number at the end. */
export const SCHEMA_6_ON: ReadonlyArray<Migration> = [
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
