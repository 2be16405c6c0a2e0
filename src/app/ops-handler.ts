import type { IncomingMessage, ServerResponse } from "node:http";
import type { ApplicationFunctionOptions, Probot } from "probot";
import type { StoreDb } from "../store/db.js";
import { metrics as processMetrics, type AppMetrics } from "./metrics.js";
import { answerOpsRoute, cachedCheck, handleOpsRoute, type OpsAnswer, type OpsState } from "./ops-routes.js";

/** What the app loaded on one Probot lends to its operational routes. */
interface LoadedOps {
  db: StoreDb;
  metrics: AppMetrics;
  github: () => Promise<string | null>;
}

// Keyed by the Probot the app was loaded on, not a module-level "current app": a handler made for
// one Probot never reads another's store (two loads in one process, as tests and some hosts do),
// and a Probot that is dropped takes its entry with it.
const loadedOn = new WeakMap<Probot, LoadedOps>();

/**
 * Records that the app is loaded on `probot` with the store `db`, counting into `metrics`: every
 * ops handler made for `probot`, before or after this, reads them from now on. Called by the app
 * function (index.ts); a host that builds the app with `createProbegate` itself may call it too.
 */
export function attachOps(probot: Probot, db: StoreDb, metrics: AppMetrics = processMetrics): void {
  // GET /app with the app's JWT: cheap, and it fails exactly when the app cannot reach GitHub or its key is refused.
  const github = cachedCheck(async () => {
    const octokit = await probot.auth();
    await octokit.request("GET /app", { request: { retries: 0, signal: AbortSignal.timeout(5000) } });
  });
  loadedOn.set(probot, { db, metrics, github });
}

/** How a host's ops routes behave beyond what the loaded app gives them. */
export interface OpsHandlerOptions {
  /** The metrics `/metrics` serves (default: those of the app loaded on the Probot, else the process's). */
  metrics?: AppMetrics;
  /** True once the host began shutting down: `/readyz` answers 503 so no new work is routed here. */
  draining?: () => boolean;
}

/** Read at each request, so a handler made before `probot.load` serves the app once it is loaded. */
function stateOf(probot: Probot, opts: OpsHandlerOptions): OpsState {
  const loaded = loadedOn.get(probot);
  return {
    metrics: opts.metrics ?? loaded?.metrics ?? processMetrics,
    db: loaded?.db ?? null,
    github: loaded?.github ?? (async () => null),
    draining: opts.draining ?? (() => false),
  };
}

/** A Node request handler as Probot's `addHandler` and `createNodeMiddleware` chain them: true when it answered. */
export type OpsHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/**
 * `/healthz`, `/readyz` and `/metrics` of the probegate app loaded on `probot`, for a host that
 * serves HTTP itself (Probot loaded without a server): mount it before Probot's middleware; it
 * resolves to true when it answered, false to pass the request on. Before the app is loaded,
 * `/healthz` is 200 and `/readyz` 503 (no store yet).
 */
export function opsHandler(probot: Probot, opts: OpsHandlerOptions = {}): OpsHandler {
  return (req, res) => handleOpsRoute(stateOf(probot, opts), req, res);
}

/**
 * The same routes as `opsHandler`, without Node's request and response: for hosts whose requests
 * are events (AWS Lambda behind API Gateway). Resolves to null for any other route.
 */
export function opsResponder(probot: Probot, opts: OpsHandlerOptions = {}): (method: string, url: string) => Promise<OpsAnswer | null> {
  return (method, url) => answerOpsRoute(stateOf(probot, opts), method, url);
}

// What Probot 14's `probot.load` hands an app when the Probot has no server (lib/probot.js): an
// `addHandler` that throws this. Probot keeps its server private, so calling is the only way to ask.
const NO_SERVER = "No server instance";

/**
 * Adds `handler` to the host's HTTP server through Probot's `addHandler` (`probot run`, Probot's
 * Server, `createNodeMiddleware`); false when the host has none (`probot.load` on a Probot without
 * a server, as Probot's testing docs and the serverless adapters do). Any other error is thrown.
 */
export function addToHostServer(options: Partial<Pick<ApplicationFunctionOptions, "addHandler">>, handler: OpsHandler): boolean {
  if (typeof options.addHandler !== "function") return false;
  try {
    options.addHandler(handler);
    return true;
  } catch (e) {
    if (e instanceof Error && e.message === NO_SERVER) return false;
    throw e;
  }
}
