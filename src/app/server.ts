import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createNodeMiddleware, Probot } from "probot";
import { z } from "zod";
import { openStore } from "../store/db.js";
import { createProbegate, type Probegate } from "./app.js";
import { handleDashboard, type Dashboard } from "./dashboard.js";
import { InFlight, trackedApp } from "./drain.js";
import { dispatchTimer, metrics as processMetrics, type AppMetrics } from "./metrics.js";
import { probegateOctokit } from "./octokit.js";
import { cachedCheck, handleOpsRoute, type OpsState } from "./ops-routes.js";
import { AppSettingsError, readAppSettings } from "./settings.js";

/** The default path GitHub posts webhooks to (Probot's). */
export const WEBHOOK_PATH = "/api/github/webhooks";

/** What the server adds around the app: operational routes, handler tracking for shutdown, and metrics. */
export interface ServerExtras {
  /** Serves /healthz, /readyz and /metrics from this state. */
  ops?: OpsState;
  /** Tracks the app's handlers, so shutdown can wait for them. */
  inFlight?: InFlight;
  /** Counts deliveries (the process's shared metrics by default). */
  metrics?: AppMetrics;
}

/**
 * An HTTP server that hands webhooks to Probot's middleware, which checks each one's
 * `X-Hub-Signature-256` against the secret before any handler sees it (4xx otherwise). With
 * `extras`, it also answers the operational routes, and tracks and counts every handler.
 */
export async function webhookServer(probot: Probot, probegate: Probegate, path = WEBHOOK_PATH, dashboard: Dashboard | null = null, extras: ServerExtras = {}): Promise<Server> {
  const m = extras.metrics ?? processMetrics;
  const appFn = trackedApp(probegate.app, extras.inFlight ?? new InFlight(), m);
  const middleware = await createNodeMiddleware(appFn, { probot, webhooksPath: path });
  return createServer((req, res) => {
    if (dashboard && handleDashboard(dashboard, req, res)) return;
    if (req.url?.split("?")[0] === path) {
      // Refused before any handler ran (bad signature, not JSON): the event header is unverified, so not a label.
      res.once("finish", () => {
        if (res.statusCode >= 400 && res.statusCode < 500) m.deliveries.inc({ event: "unverified", outcome: "rejected" });
      });
    }
    void (async () => {
      if (extras.ops && (await handleOpsRoute(extras.ops, req, res))) return;
      await middleware(req, res, () => {
        res.writeHead(404, { "content-type": "text/plain" }).end(`probegate: no route ${req.method} ${req.url}\n`);
      });
    })().catch((e: Error) => {
      probot.log.error({ err: e }, `request ${req.method} ${req.url} failed: ${e.message}`);
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
}

function privateKeyFrom(env: NodeJS.ProcessEnv): string {
  if (env.PRIVATE_KEY) return env.PRIVATE_KEY.includes("-----BEGIN") ? env.PRIVATE_KEY : Buffer.from(env.PRIVATE_KEY, "base64").toString("utf8");
  if (env.PRIVATE_KEY_PATH) {
    try {
      return readFileSync(env.PRIVATE_KEY_PATH, "utf8");
    } catch (e) {
      throw new AppSettingsError(`probegate app cannot start: PRIVATE_KEY_PATH ${env.PRIVATE_KEY_PATH} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  }
  throw new AppSettingsError("probegate app cannot start: set PRIVATE_KEY (PEM or base64 PEM) or PRIVATE_KEY_PATH to the GitHub App's private key");
}

const ServerEnv = z.object({
  LOG_FORMAT: z.enum(["json", "pretty"], { error: "must be json (one JSON object a line, for a log collector) or pretty" }).default("pretty"),
  LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"], { error: "must be one of trace, debug, info, warn, error, fatal, silent" }).default("info"),
  LOG_LEVEL_IN_STRING: z.enum(["true", "false"], { error: "must be true or false" }).default("false"),
  LOG_MESSAGE_KEY: z.string().min(1).optional(),
  PROBEGATE_DRAIN_SECONDS: z.coerce.number({ error: "must be a number of seconds" }).min(0).max(3600).default(25),
});

/** How the server logs and shuts down, from the environment (Probot's own variables included). */
export interface ServerOptions {
  log: { logFormat: "json" | "pretty"; logLevel: z.infer<typeof ServerEnv>["LOG_LEVEL"]; logLevelInString: boolean; logMessageKey?: string };
  /** How long shutdown waits for handlers in flight before it gives up on them. */
  drainMs: number;
}

/**
 * Reads the server's options. `LOG_FORMAT` was ignored before: Probot reads it only in its own
 * `createProbot`, and a `new Probot()` defaults to pretty logs, so the server passes it on itself.
 */
export function readServerOptions(env: NodeJS.ProcessEnv): ServerOptions {
  const parsed = ServerEnv.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")} ${i.message}`);
    throw new AppSettingsError(`probegate app cannot start; fix these environment variables:\n${lines.join("\n")}`);
  }
  const e = parsed.data;
  return {
    log: { logFormat: e.LOG_FORMAT, logLevel: e.LOG_LEVEL, logLevelInString: e.LOG_LEVEL_IN_STRING === "true", ...(e.LOG_MESSAGE_KEY ? { logMessageKey: e.LOG_MESSAGE_KEY } : {}) },
    drainMs: e.PROBEGATE_DRAIN_SECONDS * 1000,
  };
}

/** A started server: where it listens, and how to stop it. */
export interface StartedServer {
  server: Server;
  url: string;
  probot: Probot;
  inFlight: InFlight;
  /**
   * Stops accepting connections, marks the server not ready, waits up to `deadlineMs` (default
   * PROBEGATE_DRAIN_SECONDS) for the handlers in flight, then closes the store. Resolves to the
   * deliveries still running at the deadline (empty when all finished). Calling it again waits for the first.
   */
  close: (opts?: { deadlineMs?: number }) => Promise<Array<{ id: string; event: string }>>;
}

/**
 * Starts the app as a server: settings from `env` (refusing to start without a webhook secret,
 * signing key, app id or private key), the store opened, pending work resumed, listening on PORT.
 */
export async function startServer(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd(), m: AppMetrics = processMetrics): Promise<StartedServer> {
  const settings = readAppSettings(env, cwd);
  const opts = readServerOptions(env);
  if (!env.APP_ID || !/^\d+$/.test(env.APP_ID)) throw new AppSettingsError("probegate app cannot start: APP_ID must be the GitHub App's numeric id");
  const probot = new Probot({
    appId: env.APP_ID,
    privateKey: privateKeyFrom(env),
    secret: settings.webhookSecret,
    Octokit: probegateOctokit().plugin(dispatchTimer(m)),
    ...opts.log,
    // Probot's type lacks "silent", which its logger (pino) takes.
    logLevel: opts.log.logLevel as "info",
    ...(env.GHE_HOST ? { baseUrl: `${env.GHE_PROTOCOL ?? "https"}://${env.GHE_HOST}/api/v3` } : {}),
  });
  const db = openStore(settings.dbFile);
  m.observeStore(db);
  const probegate = createProbegate({ db, ...settings });
  const inFlight = new InFlight();
  let draining = false;
  // GET /app with the app's JWT: cheap, and it fails exactly when the app cannot reach GitHub or its key is refused.
  const github = cachedCheck(async () => {
    const octokit = await probot.auth();
    await octokit.request("GET /app", { request: { retries: 0, signal: AbortSignal.timeout(5000) } });
  });
  const ops: OpsState = { metrics: m, db, github, draining: () => draining };
  const path = env.WEBHOOK_PATH ?? WEBHOOK_PATH;
  const server = await webhookServer(probot, probegate, path, { db, token: settings.dashboardToken, ...(env.GHE_HOST ? { serverUrl: `${env.GHE_PROTOCOL ?? "https"}://${env.GHE_HOST}` } : {}) }, { ops, inFlight, metrics: m });
  const port = Number(env.PORT ?? 3000);
  const host = env.HOST ?? "0.0.0.0";
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(port, host, resolve));
  const addr = server.address();
  const url = typeof addr === "object" && addr ? `http://${host}:${addr.port}` : `http://${host}:${port}`;
  probot.log.info(`probegate listening on ${url}${path}, store ${settings.dbFile}`);
  let closing: Promise<Array<{ id: string; event: string }>> | null = null;
  const close = (o: { deadlineMs?: number } = {}) => {
    closing ??= (async () => {
      draining = true;
      const deadline = Date.now() + (o.deadlineMs ?? opts.drainMs);
      probegate.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      if (inFlight.size) probot.log.info(`shutting down: draining ${inFlight.size} delivery handler(s) in flight`);
      const drained = await inFlight.settled(deadline);
      // A finished handler's response is still being written: let the server close by itself, and
      // cut what is open (a slow client, a handler past the deadline) only at the deadline.
      // Keep-alive connections that turn idle after close() would otherwise stay open for keepAliveTimeout.
      const idle = setInterval(() => server.closeIdleConnections(), 50);
      const closedInTime = await Promise.race([closed.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), Math.max(0, deadline - Date.now())))]);
      clearInterval(idle);
      if (!closedInTime) server.closeAllConnections();
      await closed;
      const left = inFlight.list();
      if (!drained) {
        probot.log.warn(`shut down with ${left.length} delivery handler(s) unfinished after the drain deadline: ${left.map((d) => `${d.id} (${d.event})`).join(", ")}; the sweep reconciles their evaluations after the restart`);
      }
      await Promise.race([probegate.resumed(), new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())).unref())]);
      m.observeStore(null);
      db.close();
      return left;
    })();
    return closing;
  };
  return { server, url, probot, inFlight, close };
}

/**
 * Shuts `started` down on the first SIGTERM or SIGINT (Kubernetes sends SIGTERM, then SIGKILL
 * after the pod's grace period: keep PROBEGATE_DRAIN_SECONDS below it) and exits 0 when drained, 1
 * when handlers were cut off; a second signal exits 1 at once. Returns a function removing the listeners.
 */
export function closeOnSignals(started: Pick<StartedServer, "close">, exit: (code: number) => void = (c) => process.exit(c), signals: NodeJS.Signals[] = ["SIGTERM", "SIGINT"]): () => void {
  let stopping = false;
  const onSignal = () => {
    if (stopping) return exit(1);
    stopping = true;
    void started.close().then(
      (left) => exit(left.length ? 1 : 0),
      () => exit(1),
    );
  };
  for (const s of signals) process.on(s, onSignal);
  return () => {
    for (const s of signals) process.off(s, onSignal);
  };
}
