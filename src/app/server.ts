import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createNodeMiddleware, Probot } from "probot";
import { openStore } from "../store/db.js";
import { createProbegate, type Probegate } from "./app.js";
import { handleDashboard, type Dashboard } from "./dashboard.js";
import { probegateOctokit } from "./octokit.js";
import { AppSettingsError, readAppSettings } from "./settings.js";

/** The default path GitHub posts webhooks to (Probot's). */
export const WEBHOOK_PATH = "/api/github/webhooks";

/**
 * An HTTP server that hands webhooks to Probot's middleware, which checks each one's
 * `X-Hub-Signature-256` against the secret before any handler sees it (4xx otherwise).
 */
export async function webhookServer(probot: Probot, probegate: Probegate, path = WEBHOOK_PATH, dashboard: Dashboard | null = null): Promise<Server> {
  const middleware = await createNodeMiddleware(probegate.app, { probot, webhooksPath: path });
  return createServer((req, res) => {
    if (dashboard && handleDashboard(dashboard, req, res)) return;
    void middleware(req, res, () => {
      res.writeHead(404, { "content-type": "text/plain" }).end(`probegate: no route ${req.method} ${req.url}\n`);
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

/**
 * Starts the app as a server: settings from `env` (refusing to start without a webhook secret,
 * signing key, app id or private key), the store opened, pending work resumed, listening on PORT.
 */
export async function startServer(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Promise<{ server: Server; url: string; close: () => Promise<void> }> {
  const settings = readAppSettings(env, cwd);
  if (!env.APP_ID || !/^\d+$/.test(env.APP_ID)) throw new AppSettingsError("probegate app cannot start: APP_ID must be the GitHub App's numeric id");
  const probot = new Probot({
    appId: env.APP_ID,
    privateKey: privateKeyFrom(env),
    secret: settings.webhookSecret,
    Octokit: probegateOctokit(),
    logLevel: (env.LOG_LEVEL as "info" | undefined) ?? "info",
    ...(env.GHE_HOST ? { baseUrl: `${env.GHE_PROTOCOL ?? "https"}://${env.GHE_HOST}/api/v3` } : {}),
  });
  const db = openStore(settings.dbFile);
  const probegate = createProbegate({ db, ...settings });
  const server = await webhookServer(probot, probegate, env.WEBHOOK_PATH ?? WEBHOOK_PATH, { db, token: settings.dashboardToken, ...(env.GHE_HOST ? { serverUrl: `${env.GHE_PROTOCOL ?? "https"}://${env.GHE_HOST}` } : {}) });
  const port = Number(env.PORT ?? 3000);
  const host = env.HOST ?? "0.0.0.0";
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(port, host, resolve));
  const addr = server.address();
  const url = typeof addr === "object" && addr ? `http://${host}:${addr.port}` : `http://${host}:${port}`;
  probot.log.info(`probegate listening on ${url}${env.WEBHOOK_PATH ?? WEBHOOK_PATH}, store ${settings.dbFile}`);
  return {
    server,
    url,
    close: async () => {
      probegate.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      db.close();
    },
  };
}
