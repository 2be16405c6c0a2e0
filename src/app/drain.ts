import type { ApplicationFunction, Probot } from "probot";
import type { AppMetrics } from "./metrics.js";

/**
 * The webhook handlers running now, so shutdown can wait for them. Tracked per handler, not per
 * HTTP request: GitHub's webhook middleware answers 202 to a delivery whose handler runs past its
 * time-out and lets the handler go on, so an empty server is no proof that nothing runs.
 */
export class InFlight {
  private readonly running = new Map<number, { id: string; event: string; done: Promise<void> }>();
  private next = 0;

  /** How many handlers run now. */
  get size(): number {
    return this.running.size;
  }

  /** The deliveries (id and event) whose handlers run now. */
  list(): Array<{ id: string; event: string }> {
    return [...this.running.values()].map(({ id, event }) => ({ id, event }));
  }

  /** Runs `fn` as the handler of delivery `id`, tracked until it settles. */
  track<T>(id: string, event: string, fn: () => Promise<T>): Promise<T> {
    const key = this.next++;
    const run = fn();
    const done = run.then(
      () => undefined,
      () => undefined,
    );
    this.running.set(key, { id, event, done });
    void done.then(() => this.running.delete(key));
    return run;
  }

  /** Resolves true when every handler running now (or started meanwhile) settled, false at the deadline. */
  async settled(deadline: number, now: () => number = Date.now): Promise<boolean> {
    while (this.running.size > 0) {
      const left = deadline - now();
      if (left <= 0) return false;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), left)));
      const all = Promise.all([...this.running.values()].map((r) => r.done));
      const r = await Promise.race([all, timeout]);
      clearTimeout(timer);
      if (r === "timeout") return this.running.size === 0;
    }
    return true;
  }
}

type Handler = (context: { id: string; name: string; payload: unknown }) => Promise<void>;

/**
 * Wraps a Probot app function so each handler it registers with `app.on` is tracked in `inFlight`
 * and counted in `metrics` (`handled` or `failed`, by `name.action`). The app function is
 * unchanged: it is given a view of the Probot instance whose `on` adds the tracking.
 */
export function trackedApp(appFn: ApplicationFunction, inFlight: InFlight, metrics: AppMetrics): ApplicationFunction {
  return (probot, options) => {
    const on = ((events: unknown, handler: Handler) =>
      probot.on(events as Parameters<Probot["on"]>[0], ((context: Parameters<Handler>[0]) => {
        const action = (context.payload as { action?: unknown }).action;
        const event = typeof action === "string" ? `${context.name}.${action}` : context.name;
        return inFlight.track(context.id, event, () => handler(context)).then(
          () => void metrics.deliveries.inc({ event, outcome: "handled" }),
          (e: unknown) => {
            metrics.deliveries.inc({ event, outcome: "failed" });
            throw e;
          },
        );
      }) as never)) as Probot["on"];
    const view = new Proxy(probot, {
      get(target, key) {
        if (key === "on") return on;
        // Probot keeps its state in private fields: its methods must run on the instance itself.
        const v = Reflect.get(target, key, target) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    return appFn(view, options);
  };
}
