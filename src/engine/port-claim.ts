import { mkdirSync, openSync, readFileSync, rmSync, closeSync, writeSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";

/**
 * Claims on rendezvous ports between probegate processes on one runner. A port that nothing listens
 * on can still be taken: it is handed out seconds before the job's rank 0 binds it, and another
 * probegate process (a second `validate --power`, another runner service) checking the same port in
 * that window would give it to its own job; the two jobs' ranks would then meet each other's
 * store. A claim is a file created exclusively (O_EXCL) and holding the claimant's pid; a claim whose
 * process is gone is taken over.
 */
export class PortClaims {
  constructor(private readonly dir: string = defaultClaimDir()) {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
  }

  /** True when this process now holds `port` (and must `release` it); false when a live process does. */
  claim(port: number): boolean {
    const file = this.file(port);
    for (let attempt = 0; attempt < 2; attempt += 1) {
      try {
        const fd = openSync(file, "wx", 0o600);
        writeSync(fd, String(process.pid));
        closeSync(fd);
        return true;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
        if (holderAlive(file)) return false;
        rmSync(file, { force: true }); // its process is gone: the claim is stale
      }
    }
    return false;
  }

  release(port: number): void {
    const file = this.file(port);
    try {
      if (readFileSync(file, "utf8").trim() === String(process.pid)) rmSync(file, { force: true });
    } catch {
      // already gone
    }
  }

  private file(port: number): string {
    return join(this.dir, `${port}.claim`);
  }
}

function holderAlive(file: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(file, "utf8").trim());
  } catch {
    return true; // being written right now: treat as held
  }
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * One folder per user for the whole runner, not under $TMPDIR: two probegate processes with
 * different temp dirs must still see each other's claims. PROBEGATE_PORT_CLAIMS overrides it.
 */
function defaultClaimDir(): string {
  return process.env.PROBEGATE_PORT_CLAIMS || join("/tmp", `probegate-ports-${userInfo().uid}`);
}
