import { afterEach, describe, expect, it } from "vitest";
import { IllegalTransitionError } from "../../src/core/evaluation-state.js";
import { openStore, type StoreDb } from "../../src/store/db.js";
import { cancelPendingOfPr, markTimedOut, supersedeOlderHeads } from "../../src/store/evaluation-endings.js";
import {
  claimDispatch,
  findEvaluationByWorkflowRun,
  getEvaluation,
  insertOrGetEvaluation,
  listPendingEvaluations,
  releaseClaim,
  StaleEvaluationError,
  transitionEvaluation,
  UnknownEvaluationError,
} from "../../src/store/evaluations.js";
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

describe("evaluations", () => {
  it("inserts one queued row per evaluation key, then returns it", () => {
    const { db } = store();
    const first = insertOrGetEvaluation(db, newEvaluation(), T0);
    expect(first.created).toBe(true);
    expect(first.evaluation).toMatchObject({
      key: `octo/gpu-lib@${"1".repeat(40)}:sharded-optimizer:${"ab".repeat(8)}`,
      state: "queued",
      attempt: 1,
      agent: "codex",
      version: 0,
      attemptStartedAt: T0,
    });
    const again = insertOrGetEvaluation(db, newEvaluation({ agent: "other" }), at(5));
    expect(again.created).toBe(false);
    expect(again.evaluation).toEqual(first.evaluation);
    insertOrGetEvaluation(db, newEvaluation({ task: "paged-kv-cache" }), T0);
    expect(db.prepare("SELECT COUNT(*) AS n FROM evaluations").get()).toEqual({ n: 2 });
  });

  it("keeps the PR's base commit first given, fills it into a row that had none, and keeps it through a retry", () => {
    const { db } = store();
    const base = "b".repeat(40);
    const { evaluation } = insertOrGetEvaluation(db, newEvaluation({ baseSha: base }), T0);
    expect(evaluation.baseSha).toBe(base);
    // The PR's base moved on (main got commits) before a rerun of the same head: the base judged stays.
    expect(insertOrGetEvaluation(db, newEvaluation({ baseSha: "c".repeat(40) }), at(1)).evaluation.baseSha).toBe(base);
    transitionEvaluation(db, evaluation.key, "dispatch", { now: at(2), patch: { checkRunId: 1, workflowRunId: 2 } });
    transitionEvaluation(db, evaluation.key, "fail", { now: at(3), patch: { error: "runner died" } });
    expect(transitionEvaluation(db, evaluation.key, "retry", { now: at(4) }).baseSha).toBe(base);
    // A row queued before the store kept bases (migration 12) learns it from the PR's next event.
    const legacy = insertOrGetEvaluation(db, newEvaluation({ task: "paged-kv-cache" }), T0).evaluation;
    expect(legacy.baseSha).toBeNull();
    const filled = insertOrGetEvaluation(db, newEvaluation({ task: "paged-kv-cache", baseSha: base }), at(5));
    expect(filled).toMatchObject({ created: false, evaluation: { key: legacy.key, baseSha: base, version: legacy.version } });
  });

  it("walks the state machine, recording run ids, verdict and the attempt result", () => {
    const { db } = store();
    const { evaluation } = insertOrGetEvaluation(db, newEvaluation(), T0);
    const d = transitionEvaluation(db, evaluation.key, "dispatch", { now: at(1), patch: { checkRunId: 11, workflowRunId: 501 } });
    expect(d).toMatchObject({ state: "dispatched", checkRunId: 11, workflowRunId: 501, version: 1, updatedAt: at(1) });
    expect(findEvaluationByWorkflowRun(db, 501)?.key).toBe(evaluation.key);
    transitionEvaluation(db, evaluation.key, "start", { now: at(2) });
    const done = transitionEvaluation(db, evaluation.key, "complete", { now: at(3), patch: { verdict: "probe-rejected" } });
    expect(done).toMatchObject({ state: "completed", verdict: "probe-rejected", checkRunId: 11, version: 3 });
    expect(db.prepare("SELECT attempt, verdict, finished_at FROM attempt_results").all()).toEqual([{ attempt: 1, verdict: "probe-rejected", finished_at: at(3).getTime() }]);

    const retried = transitionEvaluation(db, evaluation.key, "retry", { now: at(10) });
    expect(retried).toMatchObject({ state: "queued", attempt: 2, verdict: null, workflowRunId: null, checkRunId: 11, attemptStartedAt: at(10) });
  });

  it("rejects illegal transitions through the core state machine, leaving the row as it was", () => {
    const { db } = store();
    const { evaluation } = insertOrGetEvaluation(db, newEvaluation(), T0);
    expect(() => transitionEvaluation(db, evaluation.key, "complete", { now: at(1), patch: { verdict: "resolved" } })).toThrow(IllegalTransitionError);
    expect(getEvaluation(db, evaluation.key)).toEqual(evaluation);
    expect(() => transitionEvaluation(db, "nope", "dispatch", { now: at(1) })).toThrow(UnknownEvaluationError);
    transitionEvaluation(db, evaluation.key, "dispatch", { now: at(1) });
    expect(() => transitionEvaluation(db, evaluation.key, "complete", { now: at(2) })).toThrow(/needs the verdict/);
    expect(db.prepare("SELECT COUNT(*) AS n FROM attempt_results").get()).toEqual({ n: 0 });
  });

  it("refuses a write decided on a stale read", () => {
    const { db, file } = store();
    const { evaluation } = insertOrGetEvaluation(db, newEvaluation(), T0);
    const other = openStore(file);
    open.push(other);
    transitionEvaluation(other, evaluation.key, "dispatch", { now: at(1), expectedVersion: 0 });
    expect(() => transitionEvaluation(db, evaluation.key, "fail", { now: at(2), expectedVersion: evaluation.version })).toThrow(StaleEvaluationError);
    expect(getEvaluation(db, evaluation.key)?.state).toBe("dispatched");
  });

  it("keeps pending evaluations across a restart (close and reopen the file)", () => {
    const { db, file } = store();
    const a = insertOrGetEvaluation(db, newEvaluation({ task: "a" }), T0).evaluation;
    const b = insertOrGetEvaluation(db, newEvaluation({ task: "b" }), at(1)).evaluation;
    const c = insertOrGetEvaluation(db, newEvaluation({ task: "c" }), at(2)).evaluation;
    transitionEvaluation(db, a.key, "dispatch", { now: at(3), patch: { workflowRunId: 9 } });
    transitionEvaluation(db, b.key, "dispatch", { now: at(3) });
    transitionEvaluation(db, b.key, "complete", { now: at(4), patch: { verdict: "resolved" } });
    db.close();

    const reopened = openStore(file);
    open.push(reopened);
    const pending = listPendingEvaluations(reopened);
    expect(pending.map((e) => [e.key, e.state])).toEqual([
      [a.key, "dispatched"],
      [c.key, "queued"],
    ]);
    expect(pending[0]?.workflowRunId).toBe(9);
    // The resumed evaluation carries on where it stopped.
    expect(transitionEvaluation(reopened, a.key, "complete", { now: at(5), patch: { verdict: "resolved" } }).state).toBe("completed");
  });

  it("marks pending evaluations past the deadline as timed out, once", () => {
    const { db } = store();
    const old = insertOrGetEvaluation(db, newEvaluation({ task: "old" }), T0).evaluation;
    const fresh = insertOrGetEvaluation(db, newEvaluation({ task: "fresh" }), at(50)).evaluation;
    const done = insertOrGetEvaluation(db, newEvaluation({ task: "done" }), T0).evaluation;
    transitionEvaluation(db, old.key, "dispatch", { now: at(1) });
    transitionEvaluation(db, done.key, "dispatch", { now: at(1) });
    transitionEvaluation(db, done.key, "complete", { now: at(2), patch: { verdict: "resolved" } });

    const marked = markTimedOut(db, at(61), 3600);
    expect(marked.map((e) => e.key)).toEqual([old.key]);
    expect(marked[0]).toMatchObject({ state: "timed-out", error: "no result 3600 s after the attempt began (state was 'dispatched')" });
    expect(markTimedOut(db, at(61), 3600)).toEqual([]);
    expect(getEvaluation(db, fresh.key)?.state).toBe("queued");
    // A timed-out evaluation can be retried: a new attempt with a fresh deadline.
    const retried = transitionEvaluation(db, old.key, "retry", { now: at(62) });
    expect(retried).toMatchObject({ state: "queued", attempt: 2, error: null });
    expect(markTimedOut(db, at(111), 3600).map((e) => e.key)).toEqual([fresh.key]);
  });

  it("supersedes pending evaluations of older heads of the same PR only", () => {
    const { db } = store();
    const oldHead = insertOrGetEvaluation(db, newEvaluation({ headSha: "a".repeat(40) }), T0).evaluation;
    const finished = insertOrGetEvaluation(db, newEvaluation({ headSha: "a".repeat(40), task: "x" }), T0).evaluation;
    transitionEvaluation(db, finished.key, "dispatch", { now: at(1) });
    transitionEvaluation(db, finished.key, "complete", { now: at(2), patch: { verdict: "resolved" } });
    const otherPr = insertOrGetEvaluation(db, newEvaluation({ headSha: "c".repeat(40), pr: 8 }), T0).evaluation;
    const newHead = insertOrGetEvaluation(db, newEvaluation({ headSha: "b".repeat(40) }), at(3)).evaluation;

    const superseded = supersedeOlderHeads(db, { owner: "octo", repo: "gpu-lib", pr: 7, headSha: "b".repeat(40) }, at(3));
    expect(superseded.map((e) => [e.key, e.state, e.error])).toEqual([[oldHead.key, "superseded", "superseded by bbbbbbb"]]);
    expect(getEvaluation(db, finished.key)?.state).toBe("completed");
    expect(getEvaluation(db, otherPr.key)?.state).toBe("queued");
    expect(getEvaluation(db, newHead.key)?.state).toBe("queued");
  });

  it("cancels every pending evaluation of a closed PR, whatever its head, and nothing else", () => {
    const { db } = store();
    const queued = insertOrGetEvaluation(db, newEvaluation({ headSha: "a".repeat(40) }), T0).evaluation;
    const running = insertOrGetEvaluation(db, newEvaluation({ headSha: "b".repeat(40) }), T0).evaluation;
    transitionEvaluation(db, running.key, "dispatch", { now: at(1), patch: { workflowRunId: 5 } });
    transitionEvaluation(db, running.key, "start", { now: at(2) });
    const finished = insertOrGetEvaluation(db, newEvaluation({ task: "x" }), T0).evaluation;
    transitionEvaluation(db, finished.key, "dispatch", { now: at(1) });
    transitionEvaluation(db, finished.key, "complete", { now: at(2), patch: { verdict: "resolved" } });
    const otherPr = insertOrGetEvaluation(db, newEvaluation({ pr: 8 }), T0).evaluation;

    const cancelled = cancelPendingOfPr(db, { owner: "octo", repo: "gpu-lib", pr: 7 }, "closed", at(3));
    expect(cancelled.map((e) => [e.key, e.state, e.error]).sort()).toEqual(
      [
        [queued.key, "cancelled", "closed"],
        [running.key, "cancelled", "closed"],
      ].sort(),
    );
    expect(cancelled.find((e) => e.key === running.key)?.workflowRunId).toBe(5);
    expect(getEvaluation(db, finished.key)?.state).toBe("completed");
    expect(getEvaluation(db, otherPr.key)?.state).toBe("queued");
    expect(cancelPendingOfPr(db, { owner: "octo", repo: "gpu-lib", pr: 7 }, "closed", at(4))).toEqual([]);
    // Reopened: a cancelled attempt is retried as the next attempt.
    expect(transitionEvaluation(db, queued.key, "retry", { now: at(5) })).toMatchObject({ state: "queued", attempt: 2, error: null });
  });

  it("lets one holder claim a queued attempt for dispatch until the lease runs out or the holder gives it back", () => {
    const { db } = store();
    const e = insertOrGetEvaluation(db, newEvaluation(), T0).evaluation;
    const lease = 60_000;
    expect(claimDispatch(db, e.key, "p1", T0, lease)).toBe(true);
    expect(getEvaluation(db, e.key)?.claimUntil).toEqual(new Date(T0.getTime() + lease));
    expect(claimDispatch(db, e.key, "p2", at(0.5), lease)).toBe(false);
    expect(claimDispatch(db, e.key, "p1", at(0.5), lease)).toBe(false);
    // Only the holder's token gives it back.
    releaseClaim(db, e.key, "p2");
    expect(claimDispatch(db, e.key, "p2", at(0.5), lease)).toBe(false);
    releaseClaim(db, e.key, "p1");
    expect(getEvaluation(db, e.key)?.claimUntil).toBeNull();
    expect(claimDispatch(db, e.key, "p2", at(0.5), lease)).toBe(true);
    // A holder that died: the claim can be taken once its lease has run out, not before.
    expect(claimDispatch(db, e.key, "p3", at(1), lease)).toBe(false);
    expect(claimDispatch(db, e.key, "p3", at(1.5), lease)).toBe(true);
    // Dispatched (it has a run) or ended: nothing to claim.
    releaseClaim(db, e.key, "p3");
    transitionEvaluation(db, e.key, "dispatch", { now: at(2), patch: { workflowRunId: 9 } });
    expect(claimDispatch(db, e.key, "p4", at(2), lease)).toBe(false);
    transitionEvaluation(db, e.key, "cancel", { now: at(3), patch: { error: "closed" } });
    expect(claimDispatch(db, e.key, "p4", at(3), lease)).toBe(false);
  });
});
