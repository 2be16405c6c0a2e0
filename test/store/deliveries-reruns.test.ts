import { afterEach, describe, expect, it } from "vitest";
import { RERUN_WINDOW_MS, decideRerun } from "../../src/core/rerun-policy.js";
import { openStore, type StoreDb } from "../../src/store/db.js";
import { deliveriesFor, linkDelivery, recordDelivery, seen } from "../../src/store/deliveries.js";
import { insertOrGetEvaluation, transitionEvaluation } from "../../src/store/evaluations.js";
import { attemptSummary, recentRerunTimes, recordRerunAttempt, rerunAttempts } from "../../src/store/reruns.js";
import { scorecardRows } from "../../src/store/scorecard-rows.js";
import { at, freshStore, newEvaluation, T0 } from "./store-helpers.js";

const open: StoreDb[] = [];
afterEach(() => {
  for (const db of open.splice(0)) if (db.open) db.close();
});
function store() {
  const s = freshStore();
  open.push(s.db);
  return s;
}

describe("deliveries", () => {
  it("records a delivery once; a duplicate, on this or another connection, is seen", () => {
    const { db, file } = store();
    expect(seen(db, "d-1")).toBe(false);
    expect(recordDelivery(db, { id: "d-1", event: "pull_request" }, T0)).toBe(true);
    expect(recordDelivery(db, { id: "d-1", event: "pull_request" }, at(1))).toBe(false);
    const other = openStore(file);
    open.push(other);
    expect(recordDelivery(other, { id: "d-1", event: "pull_request" }, at(2))).toBe(false);
    expect(seen(other, "d-1")).toBe(true);
    expect(db.prepare("SELECT id, received_at FROM deliveries").all()).toEqual([{ id: "d-1", received_at: T0.getTime() }]);
  });

  it("traces an evaluation to every delivery that touched it", () => {
    const { db } = store();
    const { evaluation } = insertOrGetEvaluation(db, newEvaluation(), T0);
    recordDelivery(db, { id: "open", event: "pull_request" }, T0);
    recordDelivery(db, { id: "redelivered", event: "pull_request" }, at(1));
    recordDelivery(db, { id: "done", event: "workflow_run" }, at(9));
    for (const id of ["done", "open", "redelivered", "open"]) linkDelivery(db, id, evaluation.key);
    expect(deliveriesFor(db, evaluation.key)).toEqual([
      { id: "open", event: "pull_request", receivedAt: T0 },
      { id: "redelivered", event: "pull_request", receivedAt: at(1) },
      { id: "done", event: "workflow_run", receivedAt: at(9) },
    ]);
    // Links must point at real rows: foreign keys are on.
    expect(() => linkDelivery(db, "never-recorded", evaluation.key)).toThrow(/FOREIGN KEY/);
    expect(() => linkDelivery(db, "open", "no-such-key")).toThrow(/FOREIGN KEY/);
  });
});

describe("reruns", () => {
  const pr = { owner: "octo", repo: "gpu-lib", pr: 7 };

  it("records every attempt with its reason; only accepted ones count toward the limit", () => {
    const { db } = store();
    const { evaluation } = insertOrGetEvaluation(db, newEvaluation(), T0);
    recordRerunAttempt(db, { ...pr, task: null, requestedBy: "reader", source: "comment", accepted: false, reason: "permission" }, at(1));
    recordRerunAttempt(db, { ...pr, task: "sharded-optimizer", requestedBy: "maint", source: "comment", accepted: true, reason: null, evaluationKeys: [evaluation.key] }, at(2));
    recordRerunAttempt(db, { ...pr, task: null, requestedBy: "maint", source: "check-run", accepted: true, reason: null }, at(30));
    recordRerunAttempt(db, { ...pr, pr: 8, task: null, requestedBy: "maint", source: "comment", accepted: true, reason: null }, at(31));

    const all = rerunAttempts(db, pr);
    expect(all.map((a) => [a.requestedBy, a.accepted, a.reason, a.evaluationKeys])).toEqual([
      ["reader", false, "permission", []],
      ["maint", true, null, [evaluation.key]],
      ["maint", true, null, []],
    ]);
    expect(recentRerunTimes(db, pr, at(40), RERUN_WINDOW_MS)).toEqual([at(2), at(30)]);
    expect(recentRerunTimes(db, pr, at(62), RERUN_WINDOW_MS)).toEqual([at(30)]);

    // The store feeds the policy: a third accepted rerun inside the hour is refused at a limit of 2.
    const decision = decideRerun({
      commenter: "maint",
      permission: "admin",
      isAgent: false,
      isEdited: false,
      recentAttempts: recentRerunTimes(db, pr, at(40), RERUN_WINDOW_MS),
      now: at(40),
      limit: { perPrPerHour: 2 },
    });
    expect(decision).toMatchObject({ allowed: false, reason: "rate-limited", retryAt: at(62) });
  });

  it("refuses an inconsistent attempt record", () => {
    const { db } = store();
    expect(() => recordRerunAttempt(db, { ...pr, task: null, requestedBy: "x", source: "comment", accepted: true, reason: "agent" }, T0)).toThrow(
      /reason exactly when it was refused/,
    );
  });

  it("keeps first-attempt and best-of-N per (repo, PR, task) across reruns and pushes", () => {
    const { db } = store();
    const first = insertOrGetEvaluation(db, newEvaluation(), T0).evaluation;
    transitionEvaluation(db, first.key, "dispatch", { now: at(1) });
    transitionEvaluation(db, first.key, "complete", { now: at(2), patch: { verdict: "probe-rejected" } });
    transitionEvaluation(db, first.key, "retry", { now: at(3) });
    transitionEvaluation(db, first.key, "dispatch", { now: at(4) });
    transitionEvaluation(db, first.key, "complete", { now: at(5), patch: { verdict: "official-failed" } });
    const pushed = insertOrGetEvaluation(db, newEvaluation({ headSha: "2".repeat(40) }), at(6)).evaluation;
    transitionEvaluation(db, pushed.key, "dispatch", { now: at(7) });
    transitionEvaluation(db, pushed.key, "complete", { now: at(8), patch: { verdict: "resolved" } });

    const s = attemptSummary(db, { ...pr, task: "sharded-optimizer" });
    expect(s?.attempts).toBe(3);
    expect(s?.first).toMatchObject({ evaluationKey: first.key, attempt: 1, verdict: "probe-rejected" });
    expect(s?.best).toMatchObject({ evaluationKey: pushed.key, attempt: 1, verdict: "resolved", headSha: "2".repeat(40) });
    expect(attemptSummary(db, { ...pr, task: "other" })).toBeNull();
  });
});

describe("scorecard rows", () => {
  function finish(db: StoreDb, over: Parameters<typeof newEvaluation>[0], verdicts: Array<"resolved" | "probe-rejected" | "official-failed" | "error">, start: number) {
    // Each PR has its own head: the evaluation key is (repo, head SHA, task, probe set).
    const e = insertOrGetEvaluation(db, newEvaluation({ headSha: String(over?.pr).repeat(40), ...over }), at(start)).evaluation;
    verdicts.forEach((verdict, i) => {
      if (i > 0) transitionEvaluation(db, e.key, "retry", { now: at(start + i * 3) });
      transitionEvaluation(db, e.key, "dispatch", { now: at(start + i * 3 + 1) });
      transitionEvaluation(db, e.key, "complete", { now: at(start + i * 3 + 2), patch: { verdict } });
    });
  }

  it("counts per agent × task × verdict on the chosen basis", () => {
    const { db } = store();
    finish(db, { pr: 1, agent: "codex" }, ["probe-rejected", "resolved"], 0);
    finish(db, { pr: 2, agent: "codex" }, ["probe-rejected"], 10);
    finish(db, { pr: 3, agent: "claude" }, ["resolved"], 20);
    finish(db, { pr: 4, agent: "claude", task: "paged-kv-cache" }, ["official-failed", "error"], 30);
    // Pending evaluations have no verdict and do not count.
    insertOrGetEvaluation(db, newEvaluation({ pr: 5, agent: "claude" }), at(40));

    expect(scorecardRows(db, { basis: "first-attempt" })).toEqual([
      { agent: "claude", task: "paged-kv-cache", verdict: "official-failed", count: 1 },
      { agent: "claude", task: "sharded-optimizer", verdict: "resolved", count: 1 },
      { agent: "codex", task: "sharded-optimizer", verdict: "probe-rejected", count: 2 },
    ]);
    expect(scorecardRows(db, { basis: "best-of-n" })).toEqual([
      { agent: "claude", task: "paged-kv-cache", verdict: "official-failed", count: 1 },
      { agent: "claude", task: "sharded-optimizer", verdict: "resolved", count: 1 },
      { agent: "codex", task: "sharded-optimizer", verdict: "probe-rejected", count: 1 },
      { agent: "codex", task: "sharded-optimizer", verdict: "resolved", count: 1 },
    ]);
    expect(scorecardRows(db, { basis: "all" }).reduce((n, r) => n + r.count, 0)).toBe(6);
    expect(scorecardRows(db, { basis: "first-attempt", since: at(5) }).map((r) => r.count)).toEqual([1, 1, 1]);
    expect(scorecardRows(db, { basis: "first-attempt", owner: "someone-else" })).toEqual([]);
  });
});
