import type { ApplicationFunction } from "probot";
import { openStore } from "../store/db.js";
import { createProbegate } from "./app.js";
import { InFlight, trackedApp } from "./drain.js";
import { metrics } from "./metrics.js";
import { cachedCheck, handleOpsRoute } from "./ops-routes.js";
import { readAppSettings } from "./settings.js";

/**
 * The probegate Probot app, for `probot run ./dist/app/index.js` or any Probot host: settings come
 * from the environment (it refuses to load without WEBHOOK_SECRET or PROBEGATE_SIGNING_KEY). It
 * adds `/healthz`, `/readyz` and `/metrics` to the host's server; draining on shutdown is
 * `npm start`'s (server.ts), which a host that runs the app itself must do on its own.
 */
const probegateApp: ApplicationFunction = (app, options) => {
  const settings = readAppSettings(process.env, options.cwd ?? process.cwd());
  const db = openStore(settings.dbFile);
  metrics.observeStore(db);
  const probegate = createProbegate({ db, ...settings });
  const github = cachedCheck(async () => {
    const octokit = await app.auth();
    await octokit.request("GET /app", { request: { retries: 0, signal: AbortSignal.timeout(5000) } });
  });
  options.addHandler?.((req, res) => handleOpsRoute({ metrics, db, github, draining: () => false }, req, res));
  return trackedApp(probegate.app, new InFlight(), metrics)(app, options);
};

export default probegateApp;
export { createProbegate, type Probegate, type ProbegateOptions } from "./app.js";
export { closeOnSignals, readServerOptions, startServer, webhookServer, type StartedServer } from "./server.js";
export { AppSettingsError, readAppSettings } from "./settings.js";
export { createAppMetrics, metrics, type AppMetrics } from "./metrics.js";
/** For hosts that embed the app with their own Probot: the store the app function expects. */
export { openStore } from "../store/db.js";
