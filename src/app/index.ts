import type { ApplicationFunction } from "probot";
import { openStore } from "../store/db.js";
import { createProbegate } from "./app.js";
import { readAppSettings } from "./settings.js";

/**
 * The probegate Probot app, for `probot run ./dist/app/index.js` or any Probot host: settings come
 * from the environment (it refuses to load without WEBHOOK_SECRET or PROBEGATE_SIGNING_KEY).
 */
const probegateApp: ApplicationFunction = (app, options) => {
  const settings = readAppSettings(process.env, options.cwd ?? process.cwd());
  const probegate = createProbegate({ db: openStore(settings.dbFile), ...settings });
  return probegate.app(app, options);
};

export default probegateApp;
export { createProbegate, type Probegate, type ProbegateOptions } from "./app.js";
export { startServer, webhookServer } from "./server.js";
export { AppSettingsError, readAppSettings } from "./settings.js";
/** For hosts that embed the app with their own Probot: the store the app function expects. */
export { openStore } from "../store/db.js";
