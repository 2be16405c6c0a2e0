import Database from "better-sqlite3";
import { MIGRATIONS, type Migration } from "./migrations/index.js";

/** An open store connection. */
export type StoreDb = Database.Database;

/** The store cannot be used as it is (a newer schema, a broken migration); the message says why. */
export class StoreError extends Error {
  override readonly name = "StoreError";
}

/**
 * Opens (creating if needed) the store at `file`, or an in-memory one for ":memory:", and brings its
 * schema up to date. WAL lets readers run beside the one writer; the busy timeout makes a second
 * connection (another process of the app) wait for a write lock instead of failing at once.
 */
export function openStore(file: string, opts: { busyTimeoutMs?: number; migrations?: ReadonlyArray<Migration> } = {}): StoreDb {
  const db = new Database(file);
  try {
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(opts.busyTimeoutMs ?? 5000))}`);
    // Switching to WAL takes an exclusive lock without waiting on the busy handler, so a second
    // process opening a fresh file while the first migrates it gets SQLITE_BUSY: wait and retry.
    if (file !== ":memory:") whileBusy(() => db.pragma("journal_mode = WAL"), opts.busyTimeoutMs ?? 5000);
    // With WAL, NORMAL syncs at checkpoints rather than on every commit: a crash of the app loses
    // nothing, a power loss at most the last commits (GitHub redelivers those webhooks), and a
    // delivery costs no fsyncs.
    db.pragma("synchronous = NORMAL");
    db.pragma("foreign_keys = ON");
    migrate(db, opts.migrations ?? MIGRATIONS);
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}

/** Runs `fn`, retrying every 20 ms while SQLite answers SQLITE_BUSY, for up to `timeoutMs`. */
function whileBusy<T>(fn: () => T, timeoutMs: number): T {
  const deadline = Date.now() + timeoutMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      return fn();
    } catch (e) {
      if ((e as { code?: string }).code !== "SQLITE_BUSY" || Date.now() >= deadline) throw e;
      Atomics.wait(pause, 0, 0, 20);
    }
  }
}

/** The schema version of an open store (0 for an empty file). */
export function schemaVersion(db: StoreDb): number {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").get();
  if (!table) return 0;
  const row = db.prepare("SELECT MAX(version) AS v FROM schema_version").get() as { v: number | null };
  return row.v ?? 0;
}

/**
 * Applies the migrations the store has not seen, each recorded in `schema_version`, all in one
 * write transaction: two processes opening a fresh file at once apply them once, and a failing
 * migration leaves the schema as it was. Running it again is a no-op.
 */
export function migrate(db: StoreDb, migrations: ReadonlyArray<Migration> = MIGRATIONS): number {
  const ordered = [...migrations].sort((a, b) => a.version - b.version);
  ordered.forEach((m, i) => {
    if (m.version !== i + 1) throw new StoreError(`Store migrations must be numbered 1, 2, 3, …; found ${m.version} at position ${i + 1}.`);
  });
  // A table rebuild needs foreign keys off, and that pragma is a no-op inside a transaction: turn
  // them off before it when a pending migration rebuilds (another process may apply it first; then
  // nothing runs and they are simply turned back on).
  const foreignKeys = db.pragma("foreign_keys", { simple: true }) === 1;
  const rebuilds = ordered.slice(schemaVersion(db)).some((m) => m.rebuildsTables);
  if (rebuilds && foreignKeys) db.pragma("foreign_keys = OFF");
  const run = db.transaction(() => {
    db.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT");
    const current = schemaVersion(db);
    if (current > ordered.length) {
      throw new StoreError(
        `The store ${db.name} has schema version ${current}, newer than this probegate knows (${ordered.length}); run a newer probegate or use another store file.`,
      );
    }
    const record = db.prepare("INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)");
    for (const m of ordered.slice(current)) {
      try {
        db.exec(m.sql);
      } catch (e) {
        throw new StoreError(`Store migration ${m.version} (${m.name}) failed: ${(e as Error).message}`);
      }
      if (m.rebuildsTables) {
        const dangling = db.pragma("foreign_key_check") as Array<{ table: string; rowid: number; parent: string }>;
        if (dangling.length > 0) {
          const first = dangling[0] as { table: string; rowid: number; parent: string };
          throw new StoreError(
            `Store migration ${m.version} (${m.name}) would leave ${dangling.length} row(s) pointing at missing ${first.parent} rows (first: ${first.table} rowid ${first.rowid}); nothing was changed.`,
          );
        }
      }
      record.run(m.version, m.name, Date.now());
    }
    return schemaVersion(db);
  });
  try {
    return run.immediate();
  } finally {
    if (rebuilds && foreignKeys) db.pragma("foreign_keys = ON");
  }
}
