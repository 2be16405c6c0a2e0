import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { backupStore } from "../../src/cli/store-command.js";
import { openStore, schemaVersion } from "../../src/store/db.js";
import { getEvaluation, insertOrGetEvaluation } from "../../src/store/evaluations.js";
import { tmp } from "../helpers.js";
import { cli } from "./run-cli.js";

const BETTER_SQLITE3 = createRequire(import.meta.url).resolve("better-sqlite3");

/**
 * Another process writing to the store as the app does (one committed row at a time, WAL, busy
 * timeout) until it is killed; each row's `seq` counts up from 1, so a copy is consistent exactly
 * when the seqs it holds are 1…n with no gap.
 */
function startWriter(file: string): { stop: () => Promise<number>; started: Promise<void> } {
  const script = `
const Database = require(${JSON.stringify(BETTER_SQLITE3)});
const db = new Database(${JSON.stringify(file)});
db.pragma("busy_timeout = 5000");
const ins = db.prepare("INSERT INTO deliveries (id, event, received_at) VALUES (?, 'pull_request.opened', ?)");
let seq = 0;
process.stdout.write("started\\n");
for (;;) { seq += 1; ins.run("w-" + String(seq).padStart(9, "0"), seq); }
`;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  const started = new Promise<void>((r) => child.stdout.once("data", () => r()));
  return {
    started,
    stop: () =>
      new Promise<number>((r) => {
        child.once("exit", () => {
          const db = new Database(file, { readonly: true });
          r((db.prepare("SELECT COUNT(*) AS n FROM deliveries WHERE id LIKE 'w-%'").get() as { n: number }).n);
          db.close();
        });
        child.kill("SIGKILL");
      }),
  };
}

describe("probegate store backup", () => {
  it("copies the live store while another process writes, into a consistent, restorable file", async () => {
    const dir = tmp("pg-backup-");
    const file = join(dir, "probegate.sqlite");
    const db = openStore(file);
    const t = new Date("2026-12-04T10:00:00Z");
    insertOrGetEvaluation(db, { owner: "o", repo: "r", pr: 1, headSha: "a".repeat(40), task: "sharded-optimizer", probeSet: "p".repeat(40), agent: "codex" }, t);
    // Some bulk, so the copy is not instant: 20,000 deliveries of ~1 KiB.
    const bulk = db.prepare("INSERT INTO deliveries (id, event, received_at) VALUES (?, ?, ?)");
    db.transaction(() => {
      for (let i = 0; i < 20_000; i++) bulk.run(`bulk-${i}`, `pull_request.opened ${"x".repeat(1000)}`, i);
    })();
    const writer = startWriter(file);
    await writer.started;
    await new Promise((r) => setTimeout(r, 300));
    const dest = join(dir, "backup", "probegate-2026-12-04.sqlite");
    const missingFolder = await cli("store", "backup", dest, "--db", file);
    expect(missingFolder.code).toBe(2);
    expect(missingFolder.err).toContain(`the folder ${join(dir, "backup")} does not exist`);
    const dest2 = join(dir, "probegate-2026-12-04.sqlite");
    const r = await cli("store", "backup", dest2, "--db", file);
    const written = await writer.stop();
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(new RegExp(`^backed up ${file} to ${dest2}: [\\d.]+ MiB, schema version ${schemaVersion(db)}, 1 evaluation\\(s\\), integrity ok, [\\d.]+ s\\n`));
    expect(existsSync(`${dest2}.partial`)).toBe(false);
    expect(existsSync(`${dest2}-wal`)).toBe(false);

    // Restore: the copy opens as the app's store, and holds a consistent prefix of the writer's rows.
    const restored = openStore(dest2);
    expect(restored.pragma("integrity_check", { simple: true })).toBe("ok");
    expect(getEvaluation(restored, "o/r@" + "a".repeat(40) + ":sharded-optimizer:" + "p".repeat(16))?.agent).toBe("codex");
    expect((restored.prepare("SELECT COUNT(*) AS n FROM deliveries WHERE id LIKE 'bulk-%'").get() as { n: number }).n).toBe(20_000);
    const seqs = (restored.prepare("SELECT received_at AS s FROM deliveries WHERE id LIKE 'w-%' ORDER BY received_at").all() as Array<{ s: number }>).map((x) => x.s);
    expect(seqs.length).toBeGreaterThan(0);
    expect(seqs.length).toBeLessThan(written);
    expect(seqs[seqs.length - 1]).toBe(seqs.length);
    restored.close();
    db.close();

    // Never written over, and a missing store is named.
    const again = await cli("store", "backup", dest2, "--db", file);
    expect(again.code).toBe(2);
    expect(again.err).toContain(`${dest2} already exists`);
    await expect(backupStore(join(dir, "nope.sqlite"), join(dir, "x.sqlite"))).rejects.toThrow(`the store ${join(dir, "nope.sqlite")} does not exist; name the app's store file with --db or $PROBEGATE_DB`);
  });
});
