import { mkdirSync, openSync, readFileSync, rmSync, closeSync, writeSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { HarnessError } from "./errors.js";

/**
 * Claims between the probegate processes of one runner, on what must be unique among everything
 * running on it at once:
 *  - rendezvous ports (`port-<n>`): a port nothing listens on can still be taken — it is handed out
 *    seconds before the job's rank 0 binds it, and another probegate process (a second `validate
 *    --power`, another runner service) checking it in that window would give it to its own job, whose
 *    ranks would then meet the first job's store;
 *  - sandbox uids (`uid-<n>`): each evaluation runs as a uid of its own (see `claimEvaluationUid`).
 * A claim is a file created exclusively (O_EXCL) holding the claimant's pid; a claim whose process is
 * gone is taken over.
 */
export class RunnerClaims {
  constructor(readonly where: string = defaultClaimDir()) {
    mkdirSync(this.where, { recursive: true, mode: 0o700 });
  }

  /** True when this process now holds `key` (and must `release` it); false when a live process does. */
  claim(key: string): boolean {
    const file = this.file(key);
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

  release(key: string): void {
    const file = this.file(key);
    try {
      if (readFileSync(file, "utf8").trim() === String(process.pid)) rmSync(file, { force: true });
    } catch {
      // already gone
    }
  }

  private file(key: string): string {
    return join(this.where, `${key}.claim`);
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
 * different temp dirs must still see each other's claims. PROBEGATE_CLAIMS overrides it.
 */
function defaultClaimDir(): string {
  return process.env.PROBEGATE_CLAIMS || join("/tmp", `probegate-claims-${userInfo().uid}`);
}

/** Sandbox uid slots an evaluation may claim (uid = JOB_UID_BASE + slot). */
export const UID_SLOTS = 4096;

/**
 * Claims a sandbox uid slot for one evaluation, from a random start so processes rarely collide
 * first. All jobs of an evaluation share its workspace and so its uid; two evaluations never share
 * one while both run. Throws when every slot is held by a live process.
 */
export function claimEvaluationUid(claims: RunnerClaims = new RunnerClaims()): { slot: number; release: () => void } {
  const start = Math.floor(Math.random() * UID_SLOTS);
  for (let i = 0; i < UID_SLOTS; i += 1) {
    const slot = (start + i) % UID_SLOTS;
    if (claims.claim(`uid-${slot}`)) return { slot, release: () => claims.release(`uid-${slot}`) };
  }
  throw new HarnessError(`all ${UID_SLOTS} sandbox uid slots are held by running probegate evaluations (claims in ${claims.where})`, "sandbox");
}
