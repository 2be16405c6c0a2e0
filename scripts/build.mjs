// Builds the committed bundles (dist/<entry>/index.js) with ncc and writes the JSON Schemas.
// `node scripts/build.mjs --out <dir>` builds into another folder (check-dist compares the two).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const outIndex = process.argv.indexOf("--out");
const out = outIndex > 0 ? resolve(process.argv[outIndex + 1]) : root;

/** Entry points named in ARCHITECTURE.md; each is built when its source exists. */
const ENTRIES = ["cli", "action", "app"];
const ncc = join(root, "node_modules", ".bin", "ncc");

for (const entry of ENTRIES) {
  const src = join(root, "src", entry, "index.ts");
  if (!existsSync(src)) continue;
  const dest = join(out, "dist", entry);
  rmSync(dest, { recursive: true, force: true });
  execFileSync(ncc, ["build", src, "-o", dest, "--license", "licenses.txt", "--quiet"], { cwd: root, stdio: "inherit" });
}
mkdirSync(join(out, "schema"), { recursive: true });
execFileSync(process.execPath, [join(out, "dist", "cli", "index.js"), "schema", join(out, "schema")], { stdio: "inherit" });
