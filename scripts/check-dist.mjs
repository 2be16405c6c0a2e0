// Fails when the committed dist/ or schema/ differ from a fresh build: the Action and app run
// from dist/, so a stale bundle would ship old code.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = mkdtempSync(join(tmpdir(), "probegate-dist-"));
try {
  execFileSync(process.execPath, [join(root, "scripts", "build.mjs"), "--out", tmp], { stdio: "inherit" });
  let stale = false;
  for (const dir of ["dist", "schema"]) {
    try {
      execFileSync("diff", ["-r", "-q", join(root, dir), join(tmp, dir)], { stdio: "pipe" });
    } catch (e) {
      stale = true;
      process.stderr.write(`${dir}/ is stale:\n${e.stdout?.toString() ?? ""}${e.stderr?.toString() ?? ""}`);
    }
  }
  if (stale) {
    process.stderr.write("Run `npm run build` and commit dist/ and schema/.\n");
    process.exit(1);
  }
  process.stdout.write("dist/ and schema/ match a fresh build.\n");
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
