import { existsSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { migrate, openStore, schemaVersion, StoreError, type StoreDb } from "../../src/store/db.js";
import { MIGRATIONS } from "../../src/store/migrations/index.js";
import { tmp } from "../helpers.js";
import { freshStore } from "./store-helpers.js";

const open: StoreDb[] = [];
afterEach(() => {
  for (const db of open.splice(0)) if (db.open) db.close();
});

describe("openStore and migrations", () => {
  it("creates the schema in WAL mode with foreign keys on", () => {
    const { db, file } = freshStore();
    open.push(db);
    expect(existsSync(file)).toBe(true);
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
    expect(schemaVersion(db)).toBe(MIGRATIONS.length);
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>).map((t) => t.name);
    expect(tables).toEqual(expect.arrayContaining(["evaluations", "deliveries", "delivery_evaluations", "rerun_attempts", "rerun_evaluations", "attempt_results", "schema_version"]));
  });

  it("is idempotent: migrating again or reopening applies nothing twice", () => {
    const { db, file } = freshStore();
    expect(migrate(db)).toBe(MIGRATIONS.length);
    expect(migrate(db)).toBe(MIGRATIONS.length);
    db.close();
    const again = openStore(file);
    open.push(again);
    const rows = again.prepare("SELECT version FROM schema_version ORDER BY version").all() as Array<{ version: number }>;
    expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
  });

  it("applies only the new migrations to an older store", () => {
    const { db, file } = freshStore();
    db.close();
    const next = [...MIGRATIONS, { version: MIGRATIONS.length + 1, name: "note column", sql: "ALTER TABLE deliveries ADD COLUMN note TEXT" }];
    const upgraded = openStore(file, { migrations: next });
    open.push(upgraded);
    expect(schemaVersion(upgraded)).toBe(MIGRATIONS.length + 1);
    expect(upgraded.prepare("SELECT note FROM deliveries").all()).toEqual([]);
  });

  it("rolls a failing migration back whole and names it", () => {
    const { db, file } = freshStore();
    db.close();
    const broken = [
      ...MIGRATIONS,
      { version: MIGRATIONS.length + 1, name: "half broken", sql: "CREATE TABLE extra (x INTEGER); SELECT * FROM no_such_table;" },
    ];
    expect(() => openStore(file, { migrations: broken })).toThrow(new RegExp(`Store migration ${MIGRATIONS.length + 1} \\(half broken\\) failed: no such table: no_such_table`));
    const raw = new Database(file);
    open.push(raw);
    expect(raw.prepare("SELECT name FROM sqlite_master WHERE name = 'extra'").get()).toBeUndefined();
    expect(schemaVersion(raw)).toBe(MIGRATIONS.length);
  });

  it("rebuilds evaluations (migration 3) in a store with data: every row and reference kept, foreign keys on after", () => {
    const v2 = openStore(join(tmp("pg-v2-"), "v2.sqlite"), { migrations: MIGRATIONS.slice(0, 2) });
    open.push(v2);
    const v2file = v2.name;
    v2.prepare(
      `INSERT INTO evaluations (key, owner, repo, pr, head_sha, task, probe_set, agent, state, attempt, check_run_id, workflow_run_id, verdict,
         created_at, updated_at, attempt_started_at, version, installation_id, evaluator_repo, evaluator_workflow, evaluator_ref, deadline_s, run_url)
       VALUES ('k1', 'o', 'r', 7, 'abc', 't', 'p', 'copilot', 'completed', 2, 11, 22, 'probe-rejected', 1, 2, 3, 5, 1, 'o/e', 'e.yml', 'main', 600, 'https://x/run/22'),
              ('k2', 'o', 'r', 7, 'def', 't', 'p', NULL, 'dispatched', 1, 12, 23, NULL, 4, 5, 6, 1, 1, 'o/e', 'e.yml', 'main', 600, NULL)`,
    ).run();
    v2.prepare("INSERT INTO attempt_results (evaluation_key, attempt, verdict, finished_at) VALUES ('k1', 2, 'probe-rejected', 9)").run();
    v2.prepare("INSERT INTO deliveries (id, event, received_at) VALUES ('d1', 'pull_request.opened', 1)").run();
    v2.prepare("INSERT INTO delivery_evaluations (delivery_id, evaluation_key) VALUES ('d1', 'k1'), ('d1', 'k2')").run();
    v2.prepare("INSERT INTO probe_failures (evaluation_key, attempt, probe_id, category, status, message) VALUES ('k1', 2, 'memory.peak', 'memory', 'failed', 'too much')").run();
    const before = v2.prepare("SELECT * FROM evaluations ORDER BY key").all() as Array<Record<string, unknown>>;
    v2.close();

    const v3 = openStore(v2file);
    open.push(v3);
    expect(schemaVersion(v3)).toBe(MIGRATIONS.length);
    expect(v3.pragma("foreign_keys", { simple: true })).toBe(1);
    expect(v3.pragma("foreign_key_check")).toEqual([]);
    const after = v3.prepare("SELECT * FROM evaluations ORDER BY key").all() as Array<Record<string, unknown>>;
    // Columns of later migrations (8: policy, deferral, reconciliation, runner; 12: base) start empty.
    expect(after).toEqual(before.map((r) => ({ ...r, claim_token: null, claim_until: null, policy: null, deferred_until: null, reconciled_at: null, runner: null, base_sha: null })));
    expect(v3.prepare("SELECT COUNT(*) AS n FROM delivery_evaluations").get()).toEqual({ n: 2 });
    expect(v3.prepare("SELECT COUNT(*) AS n FROM probe_failures").get()).toEqual({ n: 1 });
    // The rebuilt table takes the new state, keeps its CHECK, and its references still bind.
    v3.prepare("UPDATE evaluations SET state = 'cancelled' WHERE key = 'k2'").run();
    expect(() => v3.prepare("UPDATE evaluations SET state = 'lost' WHERE key = 'k2'").run()).toThrow(/CHECK constraint failed/);
    expect(() => v3.prepare("INSERT INTO delivery_evaluations (delivery_id, evaluation_key) VALUES ('d1', 'nope')").run()).toThrow(/FOREIGN KEY constraint failed/);
    const indexes = (v3.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'evaluations' AND sql IS NOT NULL ORDER BY name").all() as Array<{ name: string }>).map((i) => i.name);
    expect(indexes).toEqual(["evaluations_head", "evaluations_pending", "evaluations_pr", "evaluations_workflow_run"]);
  });

  it("refuses a rebuilding migration that would leave dangling references, and keeps foreign keys on", () => {
    const { db, file } = freshStore();
    db.prepare("INSERT INTO deliveries (id, event, received_at) VALUES ('d1', 'x', 1)").run();
    db.close();
    const dropping = [
      ...MIGRATIONS,
      { version: MIGRATIONS.length + 1, name: "drops deliveries", rebuildsTables: true, sql: "CREATE TABLE tmp (x INTEGER); DROP TABLE tmp;" },
    ];
    const raw = new Database(file);
    raw.prepare("INSERT INTO evaluations (key, owner, repo, head_sha, task, probe_set, state, created_at, updated_at, attempt_started_at) VALUES ('k', 'o', 'r', 's', 't', 'p', 'queued', 1, 1, 1)").run();
    raw.pragma("foreign_keys = OFF");
    raw.prepare("INSERT INTO delivery_evaluations (delivery_id, evaluation_key) VALUES ('gone', 'k')").run();
    raw.close();
    const handle = new Database(file);
    open.push(handle);
    handle.pragma("foreign_keys = ON");
    expect(() => migrate(handle, dropping)).toThrow(/would leave 1 row\(s\) pointing at missing deliveries rows \(first: delivery_evaluations rowid \d+\); nothing was changed/);
    expect(schemaVersion(handle)).toBe(MIGRATIONS.length);
    expect(handle.pragma("foreign_keys", { simple: true })).toBe(1);
  });

  it("refuses a store from a newer probegate", () => {
    const { db, file } = freshStore();
    db.prepare("INSERT INTO schema_version (version, name, applied_at) VALUES (99, 'future', 0)").run();
    db.close();
    expect(() => openStore(file)).toThrow(StoreError);
    expect(() => openStore(file)).toThrow(/has schema version 99, newer than this probegate knows/);
  });

  it("refuses migrations that are not numbered 1, 2, 3", () => {
    expect(() => openStore(":memory:", { migrations: [{ version: 2, name: "x", sql: "" }] })).toThrow(/numbered 1, 2, 3/);
  });

  it("opens an in-memory store", () => {
    const db = openStore(":memory:");
    open.push(db);
    expect(schemaVersion(db)).toBe(MIGRATIONS.length);
  });
});
