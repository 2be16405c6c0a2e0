import { existsSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import { InputError } from "../engine/errors.js";
import { schemaVersion } from "../store/db.js";
import type { Io } from "./main.js";

/** What a backup wrote, checked by opening the copy. */
export interface BackupReport {
  source: string;
  dest: string;
  bytes: number;
  schemaVersion: number;
  evaluations: number;
  seconds: number;
}

/** Pages per backup step: all of them, so the copy is one consistent read of the store (see below). */
const ALL_PAGES = 0x7fffffff;

/**
 * Copies the live store at `source` to `dest` with SQLite's online backup API (better-sqlite3's
 * `db.backup()`), while the app keeps writing. The copy is taken in one step, inside one read
 * transaction: in WAL mode (the store's) that blocks no writer, and it is a consistent snapshot —
 * a backup in small steps restarts whenever another process writes, and under a busy app might
 * never end. Written to `<dest>.partial` and renamed when checked (`PRAGMA integrity_check`), so
 * `dest` is never a half copy. Refuses a missing source or an existing `dest`.
 */
export async function backupStore(source: string, dest: string): Promise<BackupReport> {
  const src = resolve(source);
  const out = resolve(dest);
  if (!existsSync(src)) throw new InputError(`store backup: the store ${src} does not exist; name the app's store file with --db or $PROBEGATE_DB.`, { field: "--db" });
  if (existsSync(out)) throw new InputError(`store backup: ${out} already exists; name a new file (backups are never written over).`, { field: "dest" });
  if (!existsSync(dirname(out))) throw new InputError(`store backup: the folder ${dirname(out)} does not exist; create it first.`, { field: "dest" });
  const partial = `${out}.partial`;
  rmSync(partial, { force: true });
  const t0 = performance.now();
  // Not openStore: a backup must not migrate the live store (a newer app may own its schema).
  const db = new Database(src, { fileMustExist: true });
  try {
    db.pragma("busy_timeout = 10000");
    await db.backup(partial, { progress: () => ALL_PAGES });
  } catch (e) {
    rmSync(partial, { force: true });
    throw new Error(`store backup of ${src} failed: ${(e as Error).message}`);
  } finally {
    db.close();
  }
  const copy = new Database(partial, { fileMustExist: true });
  let report: Omit<BackupReport, "seconds" | "bytes">;
  try {
    const integrity = copy.pragma("integrity_check", { simple: true });
    if (integrity !== "ok") throw new Error(`the copy ${partial} fails SQLite's integrity check (${String(integrity)}); it was kept for inspection, ${out} was not written`);
    const hasEvaluations = copy.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'evaluations'").get();
    const evaluations = hasEvaluations ? (copy.prepare("SELECT COUNT(*) AS n FROM evaluations").get() as { n: number }).n : 0;
    // The copy carries the store's WAL mode; fold it into one file so `dest` stands alone.
    copy.pragma("wal_checkpoint(TRUNCATE)");
    report = { source: src, dest: out, schemaVersion: schemaVersion(copy), evaluations };
  } finally {
    copy.close();
  }
  renameSync(partial, out);
  for (const side of ["-wal", "-shm"]) rmSync(`${partial}${side}`, { force: true });
  return { ...report, bytes: statSync(out).size, seconds: (performance.now() - t0) / 1000 };
}

/** `probegate store backup <dest> [--db file]`: prints what was copied; exit 0, or 2 on bad input. */
export async function storeBackupCommand(dest: string, flags: { db?: string }, io: Io): Promise<number> {
  const source = flags.db ?? process.env.PROBEGATE_DB ?? "probegate.sqlite";
  const r = await backupStore(source, dest);
  io.stdout(
    `backed up ${r.source} to ${r.dest}: ${(r.bytes / 1024 / 1024).toFixed(1)} MiB, schema version ${r.schemaVersion}, ${r.evaluations} evaluation(s), integrity ok, ${r.seconds.toFixed(2)} s\n` +
      `restore: stop the app, move ${r.dest} to the store's path (delete that path's -wal and -shm files first), start the app\n`,
  );
  return 0;
}
