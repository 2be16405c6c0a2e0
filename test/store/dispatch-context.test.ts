import { afterEach, describe, expect, it } from "vitest";
import { schemaVersion, type StoreDb } from "../../src/store/db.js";
import { deliveriesFor, forgetDelivery, linkDelivery, recordDelivery, seen } from "../../src/store/deliveries.js";
import { evaluationsOfPr, getDispatchContext, probeFailures, recordProbeFailures, setDispatchContext, setRunUrl, timeOutOverdue } from "../../src/store/dispatch-context.js";
import { insertOrGetEvaluation, transitionEvaluation } from "../../src/store/evaluations.js";
import { sampleResult } from "../helpers.js";
import { at, freshStore, newEvaluation, T0 } from "./store-helpers.js";

const open: StoreDb[] = [];
afterEach(() => {
  for (const db of open.splice(0)) if (db.open) db.close();
});
function store(): StoreDb {
  const { db } = freshStore();
  open.push(db);
  return db;
}
const CTX = { installationId: 1, evaluatorRepo: "o/evaluator", workflow: "evaluate.yml", ref: "main", deadlineS: 600 };

describe("dispatch context (migration 2)", () => {
  it("is recorded per evaluation, with the run's page once known", () => {
    const db = store();
    expect(schemaVersion(db)).toBeGreaterThanOrEqual(2);
    const { evaluation } = insertOrGetEvaluation(db, newEvaluation(), T0);
    expect(getDispatchContext(db, evaluation.key)).toBeNull();
    setDispatchContext(db, evaluation.key, CTX);
    setRunUrl(db, evaluation.key, "https://github.com/o/evaluator/actions/runs/1");
    expect(getDispatchContext(db, evaluation.key)).toEqual({ ...CTX, runUrl: "https://github.com/o/evaluator/actions/runs/1" });
  });

  it("times out each pending evaluation by its own deadline, else the default", () => {
    const db = store();
    const short = insertOrGetEvaluation(db, newEvaluation({ task: "short" }), T0).evaluation;
    const long = insertOrGetEvaluation(db, newEvaluation({ task: "long" }), T0).evaluation;
    insertOrGetEvaluation(db, newEvaluation({ task: "plain" }), T0);
    setDispatchContext(db, short.key, { ...CTX, deadlineS: 300 });
    setDispatchContext(db, long.key, { ...CTX, deadlineS: 3600 });
    expect(timeOutOverdue(db, at(4), 1200)).toEqual([]);
    expect(timeOutOverdue(db, at(6), 1200).map((e) => e.task)).toEqual(["short"]);
    expect(timeOutOverdue(db, at(21), 1200).map((e) => [e.task, e.state, e.error])).toEqual([["plain", "timed-out", "no result 1200 s after the attempt began (state was 'queued')"]]);
    expect(timeOutOverdue(db, at(61), 1200).map((e) => e.task)).toEqual(["long"]);
  });

  it("keeps the failed probe checks of an attempt, never the passed ones", () => {
    const db = store();
    const { evaluation } = insertOrGetEvaluation(db, newEvaluation(), T0);
    recordProbeFailures(db, evaluation.key, 1, sampleResult().probes);
    expect(probeFailures(db, evaluation.key, 1)).toEqual([{ probeId: "state-sharded", category: "memory", status: "failed", message: "optimizer state per rank is 64.0 MiB | expected ≤ 34 MiB" }]);
    expect(probeFailures(db, evaluation.key, 2)).toEqual([]);
  });

  it("lists a PR's evaluations, newest first", () => {
    const db = store();
    const a = insertOrGetEvaluation(db, newEvaluation({ task: "a" }), T0).evaluation;
    insertOrGetEvaluation(db, newEvaluation({ task: "b" }), at(1));
    insertOrGetEvaluation(db, newEvaluation({ task: "c", pr: 8 }), at(2));
    transitionEvaluation(db, a.key, "dispatch", { now: at(3) });
    expect(evaluationsOfPr(db, { owner: "octo", repo: "gpu-lib", pr: 7 }).map((e) => e.task)).toEqual(["a", "b"]);
  });
});

describe("forgetDelivery", () => {
  it("forgets a delivery and its links, so a redelivery counts as new; the evaluation stays", () => {
    const db = store();
    const { evaluation } = insertOrGetEvaluation(db, newEvaluation(), T0);
    expect(recordDelivery(db, { id: "d1", event: "pull_request.opened" }, T0)).toBe(true);
    linkDelivery(db, "d1", evaluation.key);
    forgetDelivery(db, "d1");
    expect(seen(db, "d1")).toBe(false);
    expect(deliveriesFor(db, evaluation.key)).toEqual([]);
    expect(recordDelivery(db, { id: "d1", event: "pull_request.opened" }, at(1))).toBe(true);
  });
});
