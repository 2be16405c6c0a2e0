// `npm start`: runs the probegate app's webhook server from the committed bundle.
import { startServer, AppSettingsError } from "../dist/app/index.js";

try {
  const { close } = await startServer(process.env);
  for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => void close().then(() => process.exit(0)));
} catch (e) {
  process.stderr.write(`${e instanceof AppSettingsError ? e.message : e.stack ?? e}\n`);
  process.exit(1);
}
