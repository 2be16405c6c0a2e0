import { describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { knownGoodHistories, quarantinedChecksOf, recordKnownGoodOutcomes } from "../../src/store/probe-health.js";
import type { CheckStatus } from "../../src/core/probe-check.js";
import { at, freshStore } from "./store-helpers.js";

const SET_A = `sha256:${"a".repeat(64)}`;
const SET_B = `sha256:${"b".repeat(64)}`;

function record(db: ReturnType<typeof openStore>, probeSet: string, n: number, flaky: (i: number) => CheckStatus): void {
  for (let i = 0; i < n; i++) {
    recordKnownGoodOutcomes(db, { task: "weight-sync", probeSet, submission: `reference.patch run ${i + 1}/${n}`, source: "validate --power", at: at(i) }, [
      { id: "steady", probe: "probe_state", status: "passed" },
      { id: "flaky", probe: "probe_time", status: flaky(i) },
    ]);
  }
}

describe("known-good outcomes (store)", () => {
  it("keeps each check's latest 20 outcomes per task and probe set, newest first, across reopening", () => {
    const { db, file } = freshStore();
    record(db, SET_A, 25, (i) => (i === 0 ? "failed" : "passed"));
    db.close();
    const again = openStore(file);
    const h = knownGoodHistories(again, { task: "weight-sync", probeSet: SET_A });
    expect(h.map((x) => [x.check, x.statuses.length])).toEqual([["flaky", 20], ["steady", 20]]);
    // The one failure was the oldest of 25: outside the window.
    expect(h.find((x) => x.check === "flaky")?.statuses.includes("failed")).toBe(false);
    expect(knownGoodHistories(again, { task: "paged-kv-cache", probeSet: SET_A })).toEqual([]);
    again.close();
  });

  it("quarantines a check that failed twice in its last 20 on the probe set, and a new probe set starts afresh", () => {
    const { db } = freshStore();
    record(db, SET_A, 20, (i) => (i === 3 || i === 17 ? "failed" : "passed"));
    expect(quarantinedChecksOf(db, { task: "weight-sync", probeSet: SET_A })).toEqual([{ check: "flaky", failures: 2, window: 20 }]);
    expect(quarantinedChecksOf(db, { task: "weight-sync", probeSet: SET_B })).toEqual([]);
    record(db, SET_B, 5, (i) => (i === 1 ? "error" : "passed"));
    expect(quarantinedChecksOf(db, { task: "weight-sync", probeSet: SET_B })).toEqual([]);
    db.close();
  });

  it("refuses a status the probe protocol does not have", () => {
    const { db } = freshStore();
    expect(() => recordKnownGoodOutcomes(db, { task: "t", probeSet: SET_A, submission: "r", source: "s", at: at(0) }, [{ id: "x", probe: "p", status: "flaky" as CheckStatus }])).toThrow(/CHECK constraint/);
    db.close();
  });
});
