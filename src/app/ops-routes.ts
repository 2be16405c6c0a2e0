import { statfsSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { dirname } from "node:path";
import type { StoreDb } from "../store/db.js";
import type { AppMetrics } from "./metrics.js";

/** Below this much free space in the store's folder the app is not ready: SQLite's next commit may fail. */
export const MIN_STORE_FREE_BYTES = 64 * 1024 * 1024;

/** How long a GitHub reachability answer is reused: probes come every few seconds, GitHub need not see each. */
export const GITHUB_CHECK_CACHE_MS = 5000;

class Rollback extends Error {}

/**
 * Whether the store can take a write now: a write transaction (the write lock, a change to the
 * schema) rolled back, so nothing is left, plus free space in its folder. Null when it can, else
 * why not. A store on a file system remounted read-only, a read-only file or a closed connection
 * all fail here.
 */
export function storeWriteProblem(db: StoreDb, statfs: (dir: string) => { bavail: number; bsize: number } = statfsSync): string | null {
  if (!db.open) return "the store's connection is closed";
  try {
    db.transaction(() => {
      db.prepare("CREATE TABLE probegate_readyz_probe (x INTEGER)").run();
      throw new Rollback();
    }).immediate();
  } catch (e) {
    if (!(e instanceof Rollback)) return `the store ${db.name} cannot be written (${(e as { code?: string }).code ?? "error"}: ${(e as Error).message})`;
  }
  if (db.name !== ":memory:" && !db.memory) {
    const fs = statfs(dirname(db.name));
    const free = fs.bavail * fs.bsize;
    if (free < MIN_STORE_FREE_BYTES) return `the store's folder ${dirname(db.name)} has ${Math.floor(free / 1024 / 1024)} MiB free (at least ${MIN_STORE_FREE_BYTES / 1024 / 1024} MiB needed)`;
  }
  return null;
}

/**
 * Asks `check` (a cheap GitHub call) at most once per `ttlMs`; callers in between share its
 * answer, or the call in flight. Resolves to null when GitHub answered, else why not.
 */
export function cachedCheck(check: () => Promise<void>, ttlMs = GITHUB_CHECK_CACHE_MS, now: () => number = Date.now): () => Promise<string | null> {
  let last: { at: number; answer: Promise<string | null> } | null = null;
  return () => {
    const t = now();
    if (last && t - last.at < ttlMs) return last.answer;
    const answer = check().then(
      () => null,
      (e: Error & { status?: number }) => `GitHub did not answer the app (${e.status ? `HTTP ${e.status}: ` : ""}${e.message})`,
    );
    last = { at: t, answer };
    return answer;
  };
}

/** What the operational routes read: the metrics, the store, GitHub, and whether the server is shutting down. */
export interface OpsState {
  metrics: AppMetrics;
  /** The store to probe; null while no app is loaded (then `/readyz` is 503, saying so). */
  db: StoreDb | null;
  /** Null when GitHub answered the app's cheap call (cached), else why not. */
  github: () => Promise<string | null>;
  /** True once shutdown began: not ready, so the load balancer sends nothing new. */
  draining: () => boolean;
}

/** Why `/readyz` is 503 before the app is loaded: a host may serve the routes before `probot.load` has run. */
export const NOT_LOADED = "the probegate app is not loaded yet: no store, and no GitHub App to ask";

/**
 * An answer of the operational routes, free of any HTTP library: what a host without Node's
 * request and response (an AWS Lambda behind API Gateway) turns into its own response.
 */
export interface OpsAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function json(status: number, body: unknown): OpsAnswer {
  return { status, headers: { "content-type": "application/json", "cache-control": "no-store" }, body: `${JSON.stringify(body)}\n` };
}

async function answerFor(state: OpsState, path: string): Promise<OpsAnswer | null> {
  if (path === "/healthz") return json(200, { status: "ok" });
  if (path === "/readyz") {
    if (state.draining()) return json(503, { ready: false, problems: ["shutting down: draining the deliveries in flight"] });
    if (!state.db) return json(503, { ready: false, problems: [NOT_LOADED] });
    const problems = [storeWriteProblem(state.db), await state.github()].filter((p): p is string => p !== null);
    return json(problems.length ? 503 : 200, { ready: problems.length === 0, problems });
  }
  if (path === "/metrics") return { status: 200, headers: { "content-type": state.metrics.registry.contentType }, body: await state.metrics.registry.metrics() };
  return null;
}

/**
 * The answer to `method` `url` if it is one of `/healthz` (the process serves: always 200),
 * `/readyz` (200 when the store can be written and GitHub answers, else 503 with each problem) or
 * `/metrics` (Prometheus text); null for any other request. A HEAD gets the GET's status and
 * headers without a body.
 */
export async function answerOpsRoute(state: OpsState, method: string, url: string): Promise<OpsAnswer | null> {
  if (method !== "GET" && method !== "HEAD") return null;
  const answer = await answerFor(state, url.split("?")[0] ?? "");
  return answer && method === "HEAD" ? { ...answer, body: "" } : answer;
}

/**
 * Serves the operational routes (see `answerOpsRoute`) on Node's HTTP; true when it answered the
 * request. Meant for the cluster's network only: keep them off the ingress that GitHub's webhooks
 * come through (they need no secret, and say nothing secret).
 */
export async function handleOpsRoute(state: OpsState, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const answer = await answerOpsRoute(state, req.method ?? "", req.url ?? "");
  if (!answer) return false;
  res.writeHead(answer.status, answer.headers).end(answer.body);
  return true;
}
