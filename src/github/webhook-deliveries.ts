import type { GitHubClient } from "./client.js";

/** One attempt of a webhook delivery, as `GET /app/hook/deliveries` lists it. */
interface DeliveryAttempt {
  id: number;
  guid: string;
  delivered_at: string;
  redelivery: boolean;
  status_code: number;
  event: string;
  action: string | null;
}

/** A delivery none of whose attempts reached the app: its newest attempt, and how many there were. */
export interface FailedDelivery {
  guid: string;
  attemptId: number;
  attempts: number;
  event: string;
  deliveredAt: Date;
}

/** An attempt GitHub could not hand to the app: no connection, a time-out (status 0) or a 5xx. */
function failed(a: DeliveryAttempt): boolean {
  return a.status_code === 0 || a.status_code >= 500;
}

/**
 * The app's webhook deliveries since `since` (newest first, paged until older) that never reached
 * it: every attempt failed. GitHub keeps them for 3 days and does not redeliver them by itself.
 */
export async function failedDeliveries(appGh: GitHubClient, since: Date): Promise<FailedDelivery[]> {
  const byGuid = new Map<string, DeliveryAttempt[]>();
  for await (const page of appGh.paginate.iterator("GET /app/hook/deliveries", { per_page: 100 })) {
    const attempts = page.data as unknown as DeliveryAttempt[];
    for (const a of attempts) byGuid.set(a.guid, [...(byGuid.get(a.guid) ?? []), a]);
    const oldest = attempts[attempts.length - 1];
    if (!oldest || new Date(oldest.delivered_at) < since) break;
  }
  const out: FailedDelivery[] = [];
  for (const [guid, attempts] of byGuid) {
    const first = attempts.reduce((a, b) => (new Date(a.delivered_at) <= new Date(b.delivered_at) ? a : b));
    if (new Date(first.delivered_at) < since || !attempts.every(failed)) continue;
    const newest = attempts.reduce((a, b) => (new Date(a.delivered_at) >= new Date(b.delivered_at) ? a : b));
    out.push({ guid, attemptId: newest.id, attempts: attempts.length, event: newest.action ? `${newest.event}.${newest.action}` : newest.event, deliveredAt: new Date(first.delivered_at) });
  }
  return out.sort((a, b) => a.deliveredAt.getTime() - b.deliveredAt.getTime());
}

/** Asks GitHub to deliver a failed delivery again (same delivery id, so the app's dedupe still holds). */
export async function redeliver(appGh: GitHubClient, attemptId: number): Promise<void> {
  await appGh.request("POST /app/hook/deliveries/{delivery_id}/attempts", { delivery_id: attemptId });
}
