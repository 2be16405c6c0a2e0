import { failedDeliveries, redeliver } from "../github/webhook-deliveries.js";
import { claimRedelivery, handled, pruneRedeliveryAsks } from "../store/deliveries.js";
import type { AppDeps } from "./deps.js";

/** A delivery is asked for again at most this many times. */
export const MAX_REDELIVERY_ASKS = 3;
/** The least time between two requests for the same delivery (GitHub lists a new attempt once it has an outcome). */
export const REDELIVERY_GAP_MS = 60_000;

/**
 * GitHub does not redeliver a webhook that failed (the app was down, restarting, or answered 5xx):
 * a `pull_request` lost that way would never be evaluated. This asks GitHub for the app's failed
 * deliveries of the last `lookbackMs` and has each redelivered (same delivery id, so the app's
 * dedupe holds): those the store has not acted on to the end, each at most MAX_REDELIVERY_ASKS
 * times and not within REDELIVERY_GAP_MS of the last request — decided by a claim in the store, so
 * sweeps of several processes (or overlapping ones of one) never ask twice. Returns the ids asked for.
 */
export async function redeliverFailed(deps: AppDeps, lookbackMs: number, gapMs = REDELIVERY_GAP_MS): Promise<string[]> {
  const now = deps.now();
  pruneRedeliveryAsks(deps.db, new Date(now.getTime() - Math.max(lookbackMs, 3 * 24 * 3600_000)));
  const gh = await deps.appAuth();
  const out: string[] = [];
  for (const d of await failedDeliveries(gh, new Date(now.getTime() - lookbackMs))) {
    if (handled(deps.db, d.guid) || !claimRedelivery(deps.db, d.guid, now, gapMs, MAX_REDELIVERY_ASKS)) continue;
    await redeliver(gh, d.attemptId);
    out.push(d.guid);
    deps.log.info({ delivery: d.guid }, `asked GitHub to redeliver ${d.event} delivery ${d.guid} (${d.attempts} failed attempt(s))`);
  }
  return out;
}
