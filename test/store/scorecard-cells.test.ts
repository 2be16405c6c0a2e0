import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { bucketOf, EXACT_LIMIT } from "../../src/core/median-sketch.js";
import type { Scorecard, ScorecardBasis } from "../../src/core/scorecard/scorecard.js";
import { openStore, type StoreDb } from "../../src/store/db.js";
import { MIGRATIONS } from "../../src/store/migrations/index.js";
import { scorecardFromCells } from "../../src/store/scorecard-cells.js";
import { scorecardOf, scorecardScan } from "../../src/store/scorecard-rows.js";
import { tmp } from "../helpers.js";

const opened: StoreDb[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});
const open = (file = join(tmp("pg-cells-"), "probegate.sqlite"), migrations = MIGRATIONS) => {
  const db = openStore(file, { migrations });
  opened.push(db);
  return db;
};
const BASES: ScorecardBasis[] = ["first-attempt", "best-of-n", "all"];
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 2, 9); // a Monday

/** Writers straight to the tables the app writes (the triggers do the rest). */
function writers(db: StoreDb) {
  const ev = db.prepare(
    "INSERT INTO evaluations (key, owner, repo, pr, head_sha, task, probe_set, agent, state, created_at, updated_at, attempt_started_at) VALUES (@key, @owner, @repo, @pr, @sha, @task, 'sha256:p', @agent, 'completed', 0, 0, 0)",
  );
  const ar = db.prepare("INSERT INTO attempt_results (evaluation_key, attempt, verdict, finished_at, area, duration_s, gpu_seconds) VALUES (?, ?, ?, ?, ?, ?, ?)");
  const pf = db.prepare("INSERT INTO probe_failures (evaluation_key, attempt, probe_id, category, status, message) VALUES (?, ?, ?, ?, ?, 'm')");
  return {
    evaluation: (key: string, over: { owner?: string; repo?: string; pr?: number | null; task?: string; agent?: string | null } = {}) =>
      ev.run({ key, owner: "octo", repo: "gpu-lib", pr: 1, sha: key.padEnd(40, "0").slice(0, 40), task: "t1", agent: "codex", ...over }),
    attempt: (key: string, attempt: number, verdict: string, finishedAt: number, area: string | null = "training", durationS: number | null = 100, gpuSeconds: number | null = 60) =>
      ar.run(key, attempt, verdict, finishedAt, area, durationS, gpuSeconds),
    failure: (key: string, attempt: number, probe: string, category: string, status = "failed") => pf.run(key, attempt, probe, category, status),
  };
}

/** The cells as migration 7's backfill would compute them from scorecard_rows now. */
function cellsNow(db: StoreDb): unknown[] {
  return db.prepare("SELECT * FROM scorecard_cells WHERE n <> 0 ORDER BY agent_j, owner, repo, task, area_j, wk, flags").all();
}
/** What migration 7's backfill of `table` (its SQL from the INSERT up to `until`) computes from scorecard_rows now, read back with `select` ($table stands for the table). */
function backfilled(db: StoreDb, table: string, until: string, select: string): unknown[] {
  const sql = MIGRATIONS.find((m) => m.version === 7)!.sql;
  const backfill = sql.slice(sql.indexOf(`INSERT INTO ${table}`), sql.indexOf(until));
  db.exec(`CREATE TEMP TABLE fresh AS SELECT * FROM ${table} WHERE 0`);
  db.exec(backfill.replace(`INSERT INTO ${table}`, "INSERT INTO temp.fresh"));
  const rows = db.prepare(select.replace("FROM $table", "FROM temp.fresh")).all();
  db.exec("DROP TABLE temp.fresh");
  return rows;
}
function recomputed(db: StoreDb): unknown[] {
  return backfilled(db, "scorecard_cells", "INSERT INTO scorecard_durations", "SELECT * FROM $table WHERE n <> 0 ORDER BY agent_j, owner, repo, task, area_j, wk, flags");
}
function histogramNow(db: StoreDb, fresh: boolean): unknown[] {
  const select = "SELECT dim, agent_j, key_j, bucket, flags, n FROM $table WHERE n <> 0 ORDER BY 1, 2, 3, 4, 5";
  if (!fresh) return db.prepare(select.replace("FROM $table", "FROM scorecard_durations")).all();
  return backfilled(db, "scorecard_durations", "CREATE TRIGGER scorecard_cells_insert", select);
}
/** GPU minutes are summed in another order by the cells: equal to 12 significant digits. */
const rounded = (card: Scorecard): unknown => JSON.parse(JSON.stringify(card, (k, v) => (k === "gpuMinutes" ? Number((v as number).toPrecision(12)) : v)));
function expectCellsMatchScan(db: StoreDb): void {
  expect(cellsNow(db)).toEqual(recomputed(db));
  expect(histogramNow(db, false)).toEqual(histogramNow(db, true));
  for (const basis of BASES) expect(rounded(scorecardFromCells(db, basis)!)).toEqual(rounded(scorecardScan(db, { basis })));
}

describe("scorecard_cells (migration 7)", () => {
  it("follows inserts, reruns, pushes, probe failures, edits and deletions of attempts", () => {
    const db = open();
    const w = writers(db);
    w.evaluation("k1");
    w.attempt("k1", 1, "probe-rejected", T0, "training", 100, 60);
    w.failure("k1", 1, "mem", "memory");
    expectCellsMatchScan(db);
    // A rerun that resolves: the best moves to attempt 2, attempt 1 stays the first.
    w.attempt("k1", 2, "resolved", T0 + 3600_000, "training", 200, 120);
    // A push to the same PR (same group), a week later: neither first nor best.
    w.evaluation("k2");
    w.attempt("k2", 1, "resolved", T0 + 8 * DAY, "training", 50, null);
    // No agent, no area, no duration, no PR, another repository, an error.
    w.evaluation("k3", { agent: null, pr: null, repo: "other", task: "t2" });
    w.attempt("k3", 1, "error", T0 + DAY, null, null, 30);
    w.evaluation("k4", { agent: "claude", pr: 9, task: "t2" });
    w.attempt("k4", 1, "probe-rejected", T0 + 2 * DAY, "rl", 75, 90);
    w.failure("k4", 1, "a", "state");
    w.failure("k4", 1, "b", "traffic");
    w.failure("k4", 1, "c", "time", "error");
    expectCellsMatchScan(db);
    const first = scorecardFromCells(db, "first-attempt")!;
    expect(first.total.figures.evaluations).toBe(3);
    expect(first.total.figures.firstAttempt).toMatchObject({ k: 0, n: 2 });
    expect(first.total.figures.bestOfN).toMatchObject({ k: 1, n: 2 });
    // Edits of a stored attempt (duration, agent, week) and a deletion: cells follow.
    db.prepare("UPDATE scorecard_rows SET duration_s = 400, gpu_seconds = 10 WHERE evaluation_key = 'k1' AND attempt = 2").run();
    db.prepare("UPDATE scorecard_rows SET agent = 'devin', finished_at = finished_at + 14 * 86400000 WHERE evaluation_key = 'k4'").run();
    expectCellsMatchScan(db);
    db.prepare("DELETE FROM scorecard_rows WHERE evaluation_key = 'k3'").run();
    expectCellsMatchScan(db);
    expect(scorecardFromCells(db, "all")!.agents.map((a) => a.agent).sort()).toEqual(["codex", "devin"]);
    // A store this small: every slice reads its exact durations, more rows than the scan reads.
    expect(scorecardFromCells(db, "all", { unlessScanIsCheaper: true })).toBeNull();
  });

  it("upgrades a store that has rows: the figures are the same before and after", () => {
    const file = join(tmp("pg-cells-mig-"), "probegate.sqlite");
    const old = open(file, MIGRATIONS.filter((m) => m.version <= 6));
    const w = writers(old);
    for (let i = 0; i < 40; i++) {
      w.evaluation(`e${i}`, { agent: i % 5 === 0 ? null : ["codex", "claude"][i % 2], pr: i % 7, task: `t${i % 3}`, repo: `r${i % 2}` });
      w.attempt(`e${i}`, 1, ["resolved", "probe-rejected", "official-failed", "error"][i % 4]!, T0 + i * DAY, i % 6 ? "training" : null, i % 9 ? 10 + i : null, 60 * (i % 3));
      if (i % 4 === 1) w.failure(`e${i}`, 1, "p", ["structure", "functional"][i % 2]!);
      if (i % 3 === 0) w.attempt(`e${i}`, 2, "resolved", T0 + i * DAY + 600_000, "training", 20 + i, 30);
    }
    const before = BASES.map((basis) => rounded(scorecardScan(old, { basis })));
    old.close();
    opened.splice(opened.indexOf(old), 1);
    const db = open(file);
    expect(db.prepare("SELECT COUNT(*) FROM scorecard_cells").pluck().get()).toBeGreaterThan(0);
    expect(BASES.map((basis) => rounded(scorecardFromCells(db, basis)!))).toEqual(before);
    expect(BASES.map((basis) => rounded(scorecardOf(db, { basis })))).toEqual(before);
    expectCellsMatchScan(db);
  });

  it("gives slices past EXACT_LIMIT durations the sketch's bucketed median, within one 1% bucket of the exact one", () => {
    const db = open();
    const w = writers(db);
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const durations: number[] = [];
    db.transaction(() => {
      for (let i = 0; i < EXACT_LIMIT + 1500; i++) {
        const d = 30 + rand() * 3000;
        w.evaluation(`b${i}`, { pr: i, task: i < 20 ? "small" : "big" });
        w.attempt(`b${i}`, 1, "resolved", T0 + i * 60_000, "training", d, 1);
        if (i >= 20) durations.push(d);
      }
    })();
    const card = scorecardFromCells(db, "first-attempt")!;
    const big = card.total.by.task.find((s) => s.key === "big")!.figures;
    const small = card.total.by.task.find((s) => s.key === "small")!.figures;
    const sorted = durations.sort((a, b) => a - b);
    const exact = (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
    expect(big.medianExact).toBe(false);
    expect(Math.abs(bucketOf(big.medianDurationS!) - bucketOf(exact))).toBeLessThanOrEqual(1);
    expect(Math.abs(big.medianDurationS! - exact) / exact).toBeLessThan(0.01);
    expect(small.medianExact).toBe(true);
    expect(rounded(card)).toEqual(rounded(scorecardScan(db, { basis: "first-attempt" })));
    // Most durations are in slices past EXACT_LIMIT: scorecardOf takes the cells.
    expect(scorecardFromCells(db, "first-attempt", { unlessScanIsCheaper: true })).not.toBeNull();
  });

  it("puts durations in the same bucket in SQL as MedianSketch does in JS", () => {
    const db = open();
    const sql = MIGRATIONS.find((m) => m.version === 7)!.sql;
    const expr = /VALUES\s*\(1, json_quote\(NEW\.agent\), json_quote\(.*?\), (\(CASE WHEN NEW\.duration_s.*?END\)), NEW\.counted/s.exec(sql)![1]!;
    const bucket = db.prepare(`SELECT ${expr.replaceAll("NEW.duration_s", "@d")}`).pluck();
    let seed = 3;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    let differ = 0;
    for (let i = 0; i < 20_000; i++) {
      const d = i % 2 ? rand() * 7200 : Math.exp(rand() * 20 - 8);
      if (bucket.get({ d }) !== bucketOf(d)) differ++;
    }
    expect(differ).toBe(0);
    expect([0, 0.0005, 1, 1e9].map((d) => bucket.get({ d }))).toEqual([0, 0.0005, 1, 1e9].map(bucketOf));
  });
});
