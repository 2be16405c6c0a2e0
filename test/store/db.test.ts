import { existsSync } from "node:fs";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { migrate, openStore, schemaVersion, StoreError, type StoreDb } from "../../src/store/db.js";
import { MIGRATIONS } from "../../src/store/migrations.js";
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
