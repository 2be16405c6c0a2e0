import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";

function files(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === "__pycache__" || e.name.startsWith(".")) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) files(p, out);
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/** `sha256:…` over the probe folder's paths and contents: the probe-set version a result was judged by. */
export function probeSetVersion(dir: string): string {
  const h = createHash("sha256");
  for (const f of files(dir).sort()) {
    h.update(relative(dir, f));
    h.update("\0");
    h.update(readFileSync(f));
    h.update("\0");
  }
  return `sha256:${h.digest("hex")}`;
}

/** Every file of the probe folder, for the leak check of what leaves the runner. */
export function probeFiles(dir: string): string[] {
  return files(dir).sort();
}
