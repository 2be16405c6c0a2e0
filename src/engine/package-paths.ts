import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The package root: two levels above this file both in the source tree (src/cli/) and in the
 * bundle (dist/cli/index.js), so the demo finds tasks/, examples/ and the probe kit either way.
 */
export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const KIT_DIR = resolve(PACKAGE_ROOT, "probes", "kit");
