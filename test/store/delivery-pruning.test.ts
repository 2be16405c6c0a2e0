import { afterEach, describe, expect, it, vi } from "vitest";
import type { StoreDb } from "../../src/store/db.js";
import { deliveriesFor, linkDelivery, pruneDeliveries, recordDelivery, seen, markDeliveryHandled } from "../../src/store/deliveries.js";
import { insertOrGetEvaluation, transitionEvaluation } from "../../src/store/evaluations.js";
import { at, freshStore, newEvaluation, T0 } from "./store-helpers.js";

const open: StoreDb[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of open.splice(0)) if (db.open) db.close();
});
function store(): StoreDb {
  const { db } = freshStore();
  open.push(db);
  return db;
}

const DAY = 24 * 60;
/** The cut-off: a delivery received before it is past retention. */
const CUTOFF = at(3 * DAY);

const ids = (db: StoreDb) => (db.prepare("SELECT id FROM deliveries ORDER BY id").all() as Array<{ id: string }>).map((r) => r.id);
const links = (db: StoreDb) =>
  (db.prepare("SELECT delivery_id, evaluation_key FROM delivery_evaluations ORDER BY delivery_id, evaluation_key").all() as Array<{ delivery_id: string; evaluation_key: string }>).map(
    (r) => `${r.delivery_id} -> ${r.evaluation_key.split(":")[1]}`,
  );

/**
 * A store with a finished evaluation (task "done") and a pending one (task "pending"), and
 * deliveries before, at and after CUTOFF linked to them in every combination.
 */
function seeded(db: StoreDb): { done: string; pending: string } {
  const done = insertOrGetEvaluation(db, newEvaluation({ task: "done" }), T0).evaluation.key;
  transitionEvaluation(db, done, "dispatch", { now: at(1) });
  transitionEvaluation(db, done, "complete", { now: at(2), patch: { verdict: "resolved" } });
  const pending = insertOrGetEvaluation(db, newEvaluation({ task: "pending" }), T0).evaluation.key;
  recordDelivery(db, { id: "old-done", event: "pull_request.opened" }, T0);
  recordDelivery(db, { id: "old-bare", event: "issue_comment.created" }, at(DAY));
  recordDelivery(db, { id: "old-pending", event: "pull_request.labeled" }, at(2 * DAY));
  recordDelivery(db, { id: "at-cutoff", event: "workflow_run.completed" }, CUTOFF);
  recordDelivery(db, { id: "recent", event: "workflow_run.completed" }, at(3 * DAY + 1));
  // Each was acted on to the end (an unfinished one could be taken over by a redelivery).
  for (const id of ["old-done", "old-bare", "old-pending", "at-cutoff", "recent"]) markDeliveryHandled(db, id, at(3 * DAY + 1));
  linkDelivery(db, "old-done", done);
  // Linked to a finished and to a pending evaluation: the pending one keeps it, with both links.
  linkDelivery(db, "old-pending", done);
  linkDelivery(db, "old-pending", pending);
  linkDelivery(db, "recent", done);
  return { done, pending };
}

describe("pruneDeliveries", () => {
  it("deletes the deliveries received before the cut-off with their links, keeps newer ones and those of pending evaluations, and counts", () => {
    const db = store();
    const { done } = seeded(db);
    expect(pruneDeliveries(db, CUTOFF)).toBe(2);
    expect(ids(db)).toEqual(["at-cutoff", "old-pending", "recent"]);
    expect(links(db)).toEqual(["old-pending -> done", "old-pending -> pending", "recent -> done"]);
    // The evaluations stay; only the trace of the forgotten deliveries goes.
    expect(deliveriesFor(db, done).map((d) => d.id)).toEqual(["old-pending", "recent"]);
    expect(db.prepare("SELECT COUNT(*) AS n FROM evaluations").get()).toEqual({ n: 2 });
    expect(pruneDeliveries(db, CUTOFF)).toBe(0);
  });

  it("takes a delivery of a pending evaluation once that evaluation has finished", () => {
    const db = store();
    const { pending } = seeded(db);
    pruneDeliveries(db, CUTOFF);
    transitionEvaluation(db, pending, "dispatch", { now: at(3 * DAY + 2) });
    expect(pruneDeliveries(db, CUTOFF)).toBe(0);
    transitionEvaluation(db, pending, "complete", { now: at(3 * DAY + 3), patch: { verdict: "probe-rejected" } });
    expect(pruneDeliveries(db, CUTOFF)).toBe(1);
    expect(ids(db)).toEqual(["at-cutoff", "recent"]);
    expect(links(db)).toEqual(["recent -> done"]);
  });

  it("lets recordDelivery treat a redelivery of a pruned id as new (and a second one as a duplicate again)", () => {
    const db = store();
    seeded(db);
    expect(recordDelivery(db, { id: "old-done", event: "pull_request.opened" }, at(3 * DAY + 5))).toBe(false);
    pruneDeliveries(db, CUTOFF);
    expect(seen(db, "old-done")).toBe(false);
    expect(recordDelivery(db, { id: "old-done", event: "pull_request.opened" }, at(3 * DAY + 6))).toBe(true);
    markDeliveryHandled(db, "old-done", at(3 * DAY + 6));
    expect(recordDelivery(db, { id: "old-done", event: "pull_request.opened" }, at(3 * DAY + 7))).toBe(false);
  });

  it("is one transaction: a failure part-way leaves every delivery and link as it was", () => {
    const db = store();
    seeded(db);
    const before = { ids: ids(db), links: links(db) };
    const prepare = db.prepare.bind(db);
    // The second DELETE (of the deliveries) fails after the links were deleted.
    vi.spyOn(db, "prepare").mockImplementation(((sql: string) => {
      if (/^DELETE FROM deliveries/.test(sql)) throw new Error("disk I/O error");
      return prepare(sql);
    }) as typeof db.prepare);
    expect(() => pruneDeliveries(db, CUTOFF)).toThrow("disk I/O error");
    vi.restoreAllMocks();
    expect({ ids: ids(db), links: links(db) }).toEqual(before);
  });

  it("reads delivery_evaluations and evaluations by key and, given an index on deliveries(received_at), scans no table", () => {
    const db = store();
    seeded(db);
    // The index the store should have (see the report); a no-op where a migration already made it.
    db.exec("CREATE INDEX IF NOT EXISTS deliveries_received ON deliveries (received_at)");
    const statements: string[] = [];
    const prepare = db.prepare.bind(db);
    vi.spyOn(db, "prepare").mockImplementation(((sql: string) => {
      statements.push(sql);
      return prepare(sql);
    }) as typeof db.prepare);
    pruneDeliveries(db, CUTOFF);
    vi.restoreAllMocks();
    expect(statements).toHaveLength(2);
    for (const sql of statements) {
      const args = [CUTOFF.getTime(), "queued", "dispatched", "running"];
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail);
      expect(plan.filter((line) => /^SCAN /.test(line)), `no full scan in:\n${plan.join("\n")}`).toEqual([]);
      expect(plan).toContainEqual(expect.stringMatching(/^SEARCH d USING INDEX \w+ \(received_at<\?\)$/));
      expect(plan).toContainEqual(expect.stringMatching(/^SEARCH l USING COVERING INDEX \w+ \(delivery_id=\?\)$/));
      expect(plan).toContainEqual(expect.stringMatching(/^SEARCH e USING INDEX \w+ \(key=\?\)$/));
    }
  });
});
