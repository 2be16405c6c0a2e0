import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { StoreDb } from "../store/db.js";

/** What a webhook delivery came to: handled, its handler threw, or refused before any handler (bad signature or body). */
export type DeliveryOutcome = "handled" | "failed" | "rejected";

/**
 * The app's Prometheus metrics (served at `/metrics`). Label values are bounded: event names come
 * from verified deliveries only (an unverified one is counted as `unverified`), states and actions
 * from the app's own code, so no caller can grow the series without limit.
 */
export interface AppMetrics {
  readonly registry: Registry;
  /** `probegate_webhook_deliveries_total{event, outcome}`: every delivery, by `name.action` and outcome. */
  readonly deliveries: Counter<"event" | "outcome">;
  /** `probegate_dispatch_duration_seconds{outcome}`: the evaluator workflow's dispatch request, as the app's Octokit saw it (retries and rate-limit waits included). */
  readonly dispatchSeconds: Histogram<"outcome">;
  /**
   * `probegate_reconcile_actions_total{action}`: what the sweep did to an evaluation whose
   * `workflow_run` webhook never came (e.g. `completed`, `failed`, `still-running`). The sweep calls
   * `metrics.reconcileActions.inc({ action })` once per evaluation it acted on.
   */
  readonly reconcileActions: Counter<"action">;
  /** `probegate_evaluations{state}`: evaluations in the store by state, read when scraped. */
  readonly evaluations: Gauge<"state">;
  /** The store the evaluations gauge reads at each scrape (null: none, the gauge is empty). */
  observeStore(db: StoreDb | null): void;
}

/** Evaluations by state, one row per state present. */
export function countEvaluationsByState(db: StoreDb): Array<{ state: string; n: number }> {
  return db.prepare("SELECT state, COUNT(*) AS n FROM evaluations GROUP BY state ORDER BY state").all() as Array<{ state: string; n: number }>;
}

/**
 * A registry with the app's metrics. `defaults` adds Node's process metrics (CPU, memory, event
 * loop lag, open handles), which a registry may hold only once per process: the shared `metrics`
 * below has them, registries made for tests do not.
 */
export function createAppMetrics(opts: { defaults?: boolean } = {}): AppMetrics {
  const registry = new Registry();
  if (opts.defaults) collectDefaultMetrics({ register: registry });
  let store: StoreDb | null = null;
  // A state that empties keeps a series at 0 instead of vanishing, so rate() and alerts see it drop.
  const seen = new Set<string>();
  const deliveries = new Counter({
    name: "probegate_webhook_deliveries_total",
    help: "Webhook deliveries received, by event (name.action; `unverified` when refused before verification) and outcome (handled, failed, rejected).",
    labelNames: ["event", "outcome"] as const,
    registers: [registry],
  });
  const dispatchSeconds = new Histogram({
    name: "probegate_dispatch_duration_seconds",
    help: "Duration of the evaluator workflow dispatch request (retries and rate-limit waits included), by outcome (ok, error).",
    labelNames: ["outcome"] as const,
    buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
    registers: [registry],
  });
  const reconcileActions = new Counter({
    name: "probegate_reconcile_actions_total",
    help: "Evaluations the sweep reconciled without their workflow_run webhook, by what it did.",
    labelNames: ["action"] as const,
    registers: [registry],
  });
  const evaluations = new Gauge({
    name: "probegate_evaluations",
    help: "Evaluations in the store, by state (read from the store at each scrape).",
    labelNames: ["state"] as const,
    registers: [registry],
    collect() {
      if (!store?.open) return;
      const rows = countEvaluationsByState(store);
      for (const s of seen) if (!rows.some((r) => r.state === s)) this.set({ state: s }, 0);
      for (const r of rows) {
        seen.add(r.state);
        this.set({ state: r.state }, r.n);
      }
    },
  });
  return {
    registry,
    deliveries,
    dispatchSeconds,
    reconcileActions,
    evaluations,
    observeStore: (db) => {
      store = db;
    },
  };
}

/**
 * The app process's metrics: what `/metrics` serves, and what handlers count into
 * (`metrics.reconcileActions.inc({ action: "completed" })`).
 */
export const metrics: AppMetrics = createAppMetrics({ defaults: true });

/** The part of an Octokit the plugin uses; its request options are Octokit's own (typed there), read here for method and url only. */
type Hookable = { hook: { wrap(name: "request", fn: (request: (o: any) => any, options: { method?: string; url?: string }) => Promise<any>): void } };

const DISPATCH = "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches";

/**
 * An Octokit plugin that times each workflow dispatch into `m.dispatchSeconds`. Registered on the
 * server's Octokit class (server.ts), so the handlers that dispatch need not know about metrics.
 */
export function dispatchTimer(m: AppMetrics): (octokit: Hookable) => void {
  return (octokit) => {
    octokit.hook.wrap("request", async (request, options) => {
      if (options.method !== "POST" || options.url !== DISPATCH) return request(options);
      const end = m.dispatchSeconds.startTimer();
      try {
        const r = await request(options);
        end({ outcome: "ok" });
        return r;
      } catch (e) {
        end({ outcome: "error" });
        throw e;
      }
    });
  };
}
