import { failedDeliveries, redeliver } from "../github/webhook-deliveries.js";
import { handled } from "../store/deliveries.js";
import type { AppDeps } from "./deps.js";

/** A delivery is asked for again at most this many times in all (its attempts, the first included). */
export const MAX_DELIVERY_ATTEMPTS = 4;

/**
 * GitHub does not redeliver a webhook that failed (the app was down, restarting, or answered 5xx):
 * a `pull_request` lost that way would never be evaluated. This asks GitHub for the app's failed
 * deliveries of the last `lookbackMs` and has each redelivered (same delivery id, so the app's
 * dedupe holds): those the store has not acted on to the end, with fewer than MAX_DELIVERY_ATTEMPTS attempts,
 * and not asked for by this process in the last `lookbackMs` (GitHub may not list the new attempt
 * yet). Returns the delivery ids asked for.
 */
export async function redeliverFailed(deps: AppDeps, asked: Map<string, number>, lookbackMs: number): Promise<string[]> {
  const now = deps.now().getTime();
  for (const [guid, at] of asked) if (now - at > lookbackMs) asked.delete(guid);
  const gh = await deps.appAuth();
  const out: string[] = [];
  for (const d of await failedDeliveries(gh, new Date(now - lookbackMs))) {
    if (d.attempts >= MAX_DELIVERY_ATTEMPTS || asked.has(d.guid) || handled(deps.db, d.guid)) continue;
    await redeliver(gh, d.attemptId);
    asked.set(d.guid, now);
    out.push(d.guid);
    deps.log.info({ delivery: d.guid }, `asked GitHub to redeliver ${d.event} delivery ${d.guid} (${d.attempts} failed attempt(s))`);
  }
  return out;
}
