import { afterEach, describe, expect, it } from "vitest";
import type { StoreDb } from "../../src/store/db.js";
import { insertOrGetEvaluation } from "../../src/store/evaluations.js";
import { concludeGate, evaluationsAtHead, getGate, openGateRecord } from "../../src/store/gates.js";
import { freshStore, newEvaluation, T0 } from "./store-helpers.js";

const open: StoreDb[] = [];
afterEach(() => {
  for (const db of open.splice(0)) if (db.open) db.close();
});

describe("gates", () => {
  it("concludes a gate once, and a new gate check run on the head (a rerun) opens it again", () => {
    const { db } = freshStore();
    open.push(db);
    const at = { owner: "octo", repo: "gpu-lib", headSha: "a".repeat(40) };
    expect(getGate(db, at)).toBeNull();
    openGateRecord(db, { ...at, pr: 7, checkRunId: 11 });
    expect(concludeGate(db, { ...at, checkRunId: 11 })).toBe(true);
    expect(concludeGate(db, { ...at, checkRunId: 11 })).toBe(false);
    // An older gate check run's id concludes nothing.
    openGateRecord(db, { ...at, pr: 7, checkRunId: 12 });
    expect(getGate(db, at)).toMatchObject({ pr: 7, checkRunId: 12, concluded: false });
    expect(concludeGate(db, { ...at, checkRunId: 11 })).toBe(false);
    expect(concludeGate(db, { ...at, checkRunId: 12 })).toBe(true);
  });

  it("lists the evaluations of one PR head only", () => {
    const { db } = freshStore();
    open.push(db);
    insertOrGetEvaluation(db, newEvaluation({ headSha: "a".repeat(40), task: "b-task" }), T0);
    insertOrGetEvaluation(db, newEvaluation({ headSha: "a".repeat(40), task: "a-task" }), T0);
    insertOrGetEvaluation(db, newEvaluation({ headSha: "b".repeat(40) }), T0);
    insertOrGetEvaluation(db, newEvaluation({ headSha: "a".repeat(40), pr: 8 }), T0);
    expect(evaluationsAtHead(db, { owner: "octo", repo: "gpu-lib", pr: 7, headSha: "a".repeat(40) }).map((e) => e.task)).toEqual(["a-task", "b-task"]);
  });
});
