// `npm start`: runs the probegate app's webhook server from the committed bundle. SIGTERM (what
// Kubernetes sends) or SIGINT stops accepting connections, waits up to PROBEGATE_DRAIN_SECONDS
// (default 25) for the delivery handlers in flight, closes the store and exits: 0 when every
// handler finished, 1 when some were cut off. A second signal exits at once.
import { startServer, closeOnSignals, AppSettingsError } from "../dist/app/index.js";

try {
  closeOnSignals(await startServer(process.env));
} catch (e) {
  process.stderr.write(`${e instanceof AppSettingsError ? e.message : e.stack ?? e}\n`);
  process.exit(1);
}
