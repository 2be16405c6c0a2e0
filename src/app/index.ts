import type { ApplicationFunction } from "probot";
import { openStore } from "../store/db.js";
import { createProbegate } from "./app.js";
import { InFlight, trackedApp } from "./drain.js";
import { metrics } from "./metrics.js";
import { addToHostServer, attachOps, opsHandler } from "./ops-handler.js";
import { readAppSettings } from "./settings.js";

/** Logged once per load when the host has no server: the operator must mount the routes or do without them. */
export const OPS_NOT_SERVED =
  "/healthz, /readyz and /metrics are not served by this host (Probot was loaded without a server): mount opsHandler(probot) from probegate's app module on the host's own HTTP server to serve them (docs/operations.md)";

/**
 * The probegate Probot app, for `probot run ./dist/app/index.js` or any Probot host: settings come
 * from the environment (it refuses to load without WEBHOOK_SECRET or PROBEGATE_SIGNING_KEY). It
 * adds `/healthz`, `/readyz` and `/metrics` to the host's server when there is one (`probot run`,
 * `createNodeMiddleware`); loaded without one (`probot.load`, the serverless adapters) it says so
 * once and leaves them to `opsHandler(probot)`. Draining on shutdown is `npm start`'s (server.ts),
 * which a host that runs the app itself must do on its own.
 */
const probegateApp: ApplicationFunction = (app, options) => {
  const settings = readAppSettings(process.env, options.cwd ?? process.cwd());
  const db = openStore(settings.dbFile);
  metrics.observeStore(db);
  const probegate = createProbegate({ db, ...settings });
  attachOps(app, db, metrics);
  if (!addToHostServer(options, opsHandler(app))) app.log.warn(OPS_NOT_SERVED);
  return trackedApp(probegate.app, new InFlight(), metrics)(app, options);
};

export default probegateApp;
export { createProbegate, type Probegate, type ProbegateOptions } from "./app.js";
export { closeOnSignals, readServerOptions, startServer, webhookServer, type StartedServer } from "./server.js";
export { AppSettingsError, readAppSettings } from "./settings.js";
export { createAppMetrics, metrics, type AppMetrics } from "./metrics.js";
export { attachOps, opsHandler, opsResponder, type OpsHandler, type OpsHandlerOptions } from "./ops-handler.js";
export type { OpsAnswer } from "./ops-routes.js";
/** For hosts that embed the app with their own Probot: the store the app function expects. */
export { openStore } from "../store/db.js";
