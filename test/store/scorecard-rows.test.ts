import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ProbeResult } from "../../src/core/result.js";
import { openStore, type StoreDb } from "../../src/store/db.js";
import { recordProbeFailures } from "../../src/store/dispatch-context.js";
import { insertOrGetEvaluation, transitionEvaluation, type NewEvaluation } from "../../src/store/evaluations.js";
import { MIGRATIONS } from "../../src/store/migrations/index.js";
import { recentEvaluations, scorecardOf, scorecardView } from "../../src/store/scorecard-rows.js";
import { CATEGORIES } from "../../src/core/probe-check.js";
import { tmp } from "../helpers.js";
import { at, freshStore, newEvaluation } from "./store-helpers.js";

const opened: StoreDb[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});
const store = () => {
  const s = freshStore();
  opened.push(s.db);
  return s.db;
};
const failed = (id: string, category: ProbeResult["category"], status: "failed" | "error" = "failed") => ({ id, category, status, message: `${id} ${status}` }) as ProbeResult;

type V = "resolved" | "probe-rejected" | "official-failed" | "error";
/** An evaluation finished once per verdict (reruns after the first), each with its probe failures. */
function finish(db: StoreDb, over: Partial<NewEvaluation>, verdicts: V[], start: number, fails: ProbeResult[][] = [], timing = { area: "training", durationS: 100, gpuSeconds: 240 }) {
  const e = insertOrGetEvaluation(db, newEvaluation({ headSha: String(over.pr ?? 0).repeat(40).slice(0, 40), ...over }), at(start)).evaluation;
  verdicts.forEach((verdict, i) => {
    if (i > 0) transitionEvaluation(db, e.key, "retry", { now: at(start + i * 3) });
    transitionEvaluation(db, e.key, "dispatch", { now: at(start + i * 3 + 1) });
    transitionEvaluation(db, e.key, "complete", { now: at(start + i * 3 + 2), patch: { verdict, ...timing } });
    recordProbeFailures(db, e.key, i + 1, fails[i] ?? []);
  });
  return e.key;
}
const rows = (db: StoreDb) =>
  db.prepare("SELECT agent, pr, task, verdict, attempt, counted, failed_mask, group_first_at, area, duration_s FROM scorecard_rows ORDER BY id").all() as Array<Record<string, unknown>>;

describe("scorecard_rows", () => {
  it("keeps first and best per (repo, PR, task) across reruns and pushes, and failed categories as bits", () => {
    const db = store();
    finish(db, { pr: 1 }, ["probe-rejected", "resolved"], 0, [[failed("mem", "memory"), failed("mem2", "memory"), failed("flaky", "time", "error")]]);
    // A push to PR 1: another evaluation key, the same group.
    finish(db, { pr: 1, headSha: "9".repeat(40) }, ["resolved"], 10);
    finish(db, { pr: null, headSha: "8".repeat(40) }, ["official-failed"], 20);
    expect(rows(db)).toEqual([
      { agent: "codex", pr: 1, task: "sharded-optimizer", verdict: "probe-rejected", attempt: 1, counted: 1, failed_mask: 8, group_first_at: at(2).getTime(), area: "training", duration_s: 100 },
      // The rerun is the best; the later push ties with it and loses (ties go to the earlier).
      { agent: "codex", pr: 1, task: "sharded-optimizer", verdict: "resolved", attempt: 2, counted: 2, failed_mask: 0, group_first_at: at(2).getTime(), area: "training", duration_s: 100 },
      { agent: "codex", pr: 1, task: "sharded-optimizer", verdict: "resolved", attempt: 1, counted: 0, failed_mask: 0, group_first_at: at(2).getTime(), area: "training", duration_s: 100 },
      // No PR: its own group, first and best.
      { agent: "codex", pr: null, task: "sharded-optimizer", verdict: "official-failed", attempt: 1, counted: 3, failed_mask: 0, group_first_at: at(22).getTime(), area: "training", duration_s: 100 },
    ]);
  });

  it("numbers category bits in the core's CATEGORIES order", () => {
    const db = store();
    finish(db, { pr: 2 }, ["probe-rejected"], 0, [CATEGORIES.map((c) => failed(`p-${c}`, c))]);
    const mask = (rows(db)[0] as { failed_mask: number }).failed_mask;
    expect(mask).toBe(2 ** CATEGORIES.length - 1);
    const one = store();
    finish(one, { pr: 3 }, ["probe-rejected"], 0, [[failed("t", "traffic")]]);
    expect((rows(one)[0] as { failed_mask: number }).failed_mask).toBe(1 << CATEGORIES.indexOf("traffic"));
  });

  it("is backfilled from an older store, flags and categories included", () => {
    const file = join(tmp("pg-sc-mig-"), "probegate.sqlite");
    const old = openStore(file, { migrations: MIGRATIONS.slice(0, 4) });
    const ev = old.prepare(
      "INSERT INTO evaluations (key, owner, repo, pr, head_sha, task, probe_set, agent, state, created_at, updated_at, attempt_started_at) VALUES (?, 'octo', 'gpu-lib', ?, ?, 't', 'p', ?, 'completed', 0, 0, 0)",
    );
    const ar = old.prepare("INSERT INTO attempt_results (evaluation_key, attempt, verdict, finished_at) VALUES (?, ?, ?, ?)");
    ev.run("k1", 5, "a".repeat(40), "claude");
    ar.run("k1", 1, "official-failed", 1000);
    ar.run("k1", 2, "probe-rejected", 2000);
    old.prepare("INSERT INTO probe_failures (evaluation_key, attempt, probe_id, category, status, message) VALUES ('k1', 2, 'x', 'state', 'failed', 'm'), ('k1', 2, 'y', 'state', 'failed', 'm')").run();
    ev.run("k2", 5, "b".repeat(40), "claude");
    ar.run("k2", 1, "probe-rejected", 3000);
    old.close();
    const db = openStore(file);
    opened.push(db);
    expect(rows(db).map((r) => [r.verdict, r.counted, r.failed_mask, r.group_first_at, r.area])).toEqual([
      ["official-failed", 1, 0, 1000, null],
      ["probe-rejected", 2, 2, 1000, null],
      ["probe-rejected", 0, 0, 1000, null],
    ]);
  });
});

describe("scorecardOf", () => {
  it("streams the store's rows into the figures, by basis, repository and time", () => {
    const db = store();
    finish(db, { pr: 1 }, ["probe-rejected", "resolved"], 0, [[failed("mem", "memory")]], { area: "training", durationS: 60, gpuSeconds: 120 });
    finish(db, { pr: 2 }, ["official-failed"], 10, [], { area: "inference", durationS: 30, gpuSeconds: 60 });
    finish(db, { pr: 3, agent: "claude", repo: "other" }, ["resolved"], 20);
    const first = scorecardOf(db, { basis: "first-attempt" });
    const codex = first.agents.find((a) => a.agent === "codex")!.figures;
    expect(codex.evaluations).toBe(2);
    expect(codex.verdicts).toMatchObject({ "probe-rejected": 1, "official-failed": 1 });
    expect(codex.failedCategories.memory).toBe(1);
    expect(codex.firstAttempt).toMatchObject({ k: 0, n: 2 });
    expect(codex.bestOfN).toMatchObject({ k: 1, n: 2 });
    expect(codex.medianDurationS).toBe(45);
    expect(codex.gpuMinutes).toBe(3);
    expect(first.keys.area).toEqual(["inference", "training"]);
    expect(scorecardOf(db, { basis: "all" }).total.figures.evaluations).toBe(4);
    expect(scorecardOf(db, { basis: "best-of-n", owner: "octo", repo: "other" }).agents.map((a) => a.agent)).toEqual(["claude"]);
    // Groups begun before `since` are left out whole: PR 1's rerun does not become a first attempt.
    expect(scorecardOf(db, { basis: "first-attempt", since: at(5) }).total.figures.evaluations).toBe(2);
    expect(scorecardOf(db, { basis: "all", since: at(5) }).total.figures.evaluations).toBe(3);
  });

  it("lists each agent's newest counted evaluations for the drill-down, with PR, commit and run", () => {
    const db = store();
    for (let pr = 1; pr <= 4; pr++) finish(db, { pr }, ["resolved"], pr * 10);
    db.prepare("UPDATE evaluations SET run_url = 'https://github.com/octo/evaluator/actions/runs/7' WHERE pr = 4").run();
    const lines = recentEvaluations(db, { basis: "first-attempt" }, ["codex", "nobody"], 3);
    expect(lines.get("codex")!.map((l) => l.pr)).toEqual([4, 3, 2]);
    expect(lines.get("codex")![0]).toMatchObject({ owner: "octo", repo: "gpu-lib", task: "sharded-optimizer", verdict: "resolved", first: true, best: true, headSha: "4".repeat(40), runUrl: "https://github.com/octo/evaluator/actions/runs/7" });
    expect(lines.get("nobody")).toEqual([]);
    const view = scorecardView(db, { basis: "all" }, 2);
    expect(view.drill.get("codex")).toHaveLength(2);
  });
});
