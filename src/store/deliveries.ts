import { PENDING_STATES } from "../core/evaluation-state.js";
import type { StoreDb } from "./db.js";

/** A webhook delivery as recorded: GitHub's `X-GitHub-Delivery` id, the event name, when it came. */
export interface DeliveryRecord {
  id: string;
  event: string;
  receivedAt: Date;
}

/**
 * How long a delivery whose handling has not finished is left to its handler: after this, the
 * handler is taken to have died with its process (killed mid-handling, before it could answer or
 * forget the delivery), and a redelivery of it is acted on.
 */
export const DELIVERY_TAKEOVER_MS = 5 * 60_000;

/**
 * Records a webhook delivery once. Returns true for the first sight of `id` and false for a
 * redelivery (concurrent or later), which the app must then not act on a second time — unless the
 * first handling never finished and began more than `takeOverAfterMs` ago (its process died), when
 * this caller takes it over (true for exactly one caller: one conditional upsert).
 */
export function recordDelivery(db: StoreDb, delivery: { id: string; event: string }, now: Date, takeOverAfterMs = DELIVERY_TAKEOVER_MS): boolean {
  const info = db
    .prepare(
      `INSERT INTO deliveries (id, event, received_at) VALUES (?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET received_at = excluded.received_at
       WHERE deliveries.handled_at IS NULL AND deliveries.received_at <= excluded.received_at - ?`,
    )
    .run(delivery.id, delivery.event, now.getTime(), takeOverAfterMs);
  return info.changes === 1;
}

/** Notes that a delivery's handling finished (acted on, or found nothing to do). */
export function markDeliveryHandled(db: StoreDb, id: string, now: Date): void {
  db.prepare("UPDATE deliveries SET handled_at = ? WHERE id = ?").run(now.getTime(), id);
}

/** Whether a delivery with this id was recorded. */
export function seen(db: StoreDb, id: string): boolean {
  return db.prepare("SELECT 1 FROM deliveries WHERE id = ?").get(id) !== undefined;
}

/** Whether a delivery with this id was acted on to the end. */
export function handled(db: StoreDb, id: string): boolean {
  return db.prepare("SELECT 1 FROM deliveries WHERE id = ? AND handled_at IS NOT NULL").get(id) !== undefined;
}

/**
 * Notes that a delivery touched an evaluation (queued it, found it a duplicate, finished it), so
 * every evaluation is traceable to each delivery behind it. Linking twice is a no-op; both the
 * delivery and the evaluation must already be in the store.
 */
export function linkDelivery(db: StoreDb, deliveryId: string, evaluationKey: string): void {
  db.prepare("INSERT INTO delivery_evaluations (delivery_id, evaluation_key) VALUES (?, ?) ON CONFLICT DO NOTHING").run(deliveryId, evaluationKey);
}

/** The deliveries that touched an evaluation, in the order they arrived. */
export function deliveriesFor(db: StoreDb, evaluationKey: string): DeliveryRecord[] {
  const rows = db
    .prepare(
      `SELECT d.id, d.event, d.received_at FROM delivery_evaluations l JOIN deliveries d ON d.id = l.delivery_id
       WHERE l.evaluation_key = ? ORDER BY d.received_at, d.id`,
    )
    .all(evaluationKey) as Array<{ id: string; event: string; received_at: number }>;
  return rows.map((r) => ({ id: r.id, event: r.event, receivedAt: new Date(r.received_at) }));
}

/**
 * Forgets a delivery whose handling failed, so GitHub's redelivery of it is acted on. Its links to
 * evaluations go with it; the evaluations stay (deduplicated by key on the next attempt).
 */
export function forgetDelivery(db: StoreDb, id: string): void {
  db.transaction(() => {
    db.prepare("DELETE FROM delivery_evaluations WHERE delivery_id = ?").run(id);
    db.prepare("DELETE FROM deliveries WHERE id = ?").run(id);
  })();
}

/**
 * Forgets the deliveries received before `olderThan`, with their links to evaluations, in one
 * transaction, and returns how many deliveries went. GitHub redelivers a delivery for 3 days only,
 * so an older id can no longer come back to be deduplicated. A delivery linked to an evaluation that
 * is still pending (queued, dispatched or running) is kept whatever its age: it is the trace of work
 * not yet finished. Once forgotten, an id that does arrive again is treated as new by recordDelivery.
 *
 * Two set-wise DELETEs (the links first: they reference the deliveries), each picking the same rows
 * with one subquery; with an index on deliveries(received_at) the age test is a range scan, and the
 * pending test reads delivery_evaluations by its primary key and evaluations by theirs.
 */
export function pruneDeliveries(db: StoreDb, olderThan: Date): number {
  const pending = PENDING_STATES.map(() => "?").join(", ");
  // Received before the cut-off and touching no pending evaluation; `d` is the delivery's row.
  const prunable = `d.received_at < ? AND NOT EXISTS (
      SELECT 1 FROM delivery_evaluations l JOIN evaluations e ON e.key = l.evaluation_key
      WHERE l.delivery_id = d.id AND e.state IN (${pending}))`;
  const args = [olderThan.getTime(), ...PENDING_STATES];
  const prune = db.transaction(() => {
    db.prepare(`DELETE FROM delivery_evaluations WHERE delivery_id IN (SELECT d.id FROM deliveries d WHERE ${prunable})`).run(...args);
    return db.prepare(`DELETE FROM deliveries AS d WHERE ${prunable}`).run(...args).changes;
  });
  // IMMEDIATE: the write lock is taken first, so both DELETEs see one state of the store and
  // another process of the app waits for them instead of failing to upgrade its lock.
  return prune.immediate();
}

/**
 * Takes the right to ask GitHub to redeliver `guid` now: true for exactly one caller (one
 * conditional upsert), and only when it was never asked for, or last asked `gapMs` or more ago,
 * and fewer than `maxAsks` times in all.
 */
export function claimRedelivery(db: StoreDb, guid: string, now: Date, gapMs: number, maxAsks: number): boolean {
  const t = now.getTime();
  const info = db
    .prepare(
      `INSERT INTO redelivery_asks (guid, asked_at, asks) VALUES (?, ?, 1)
       ON CONFLICT (guid) DO UPDATE SET asked_at = excluded.asked_at, asks = redelivery_asks.asks + 1
       WHERE redelivery_asks.asked_at <= ? AND redelivery_asks.asks < ?`,
    )
    .run(guid, t, t - gapMs, maxAsks);
  return info.changes === 1;
}

/** Forgets redelivery requests older than `olderThan` (GitHub keeps deliveries 3 days). */
export function pruneRedeliveryAsks(db: StoreDb, olderThan: Date): number {
  return db.prepare("DELETE FROM redelivery_asks WHERE asked_at < ?").run(olderThan.getTime()).changes;
}
