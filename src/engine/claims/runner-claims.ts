import { randomBytes } from "node:crypto";
import { linkSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { HarnessError } from "../errors.js";

/** Why a set of keys could not be claimed: the first key held elsewhere, and its holder's pid where known. */
export interface ClaimRefusal {
  key: string;
  pid: number | null;
}

/**
 * A job pool's word that a job of it waits for GPUs or cores (see `announceWait`): the oldest job
 * it has waiting, since when (wall-clock ms), what that job needs, and the claim keys the pool can
 * use at all.
 */
export interface WaitAnnouncement {
  /** The announcing pool's id (`<pid>-<random>`: one process may run several pools). */
  id: string;
  pid: number;
  since: number;
  gpus: number;
  cores: number;
  keys: string[];
}

/** How deep a takeover may chase takeover locks left by processes that died while holding one. */
const MAX_TAKEOVER_DEPTH = 3;

/**
 * Claims between the probegate processes of one runner, on what must be unique among everything
 * running on it at once:
 *  - rendezvous ports (`port-<n>`): a port nothing listens on can still be taken — it is handed out
 *    seconds before the job's rank 0 binds it, and another probegate process (a second `validate
 *    --power`, another runner service) checking it in that window would give it to its own job, whose
 *    ranks would then meet the first job's store;
 *  - sandbox uids (`uid-<n>`): each evaluation runs as a uid of its own (see `claimEvaluationUid`);
 *  - GPUs (`gpu-<index>`) and pinned cores (`core-<id>`): held by a job of one process's job pool
 *    (job-pool.ts), so two processes never put their jobs on one GPU or pin them to one core.
 * A claim is a file holding the claimant's pid, made by hard-linking a file already written (so a
 * claim is never seen empty) and failing when the name exists. A claim whose process is gone is
 * taken over, see `removeStale`.
 *
 * Beside the claims, a job pool that waits for GPUs or cores announces it (`<id>.wait`), so the
 * pools of other processes can leave it its turn instead of handing what they free straight to
 * their own queues (job-pool.ts).
 */
export class RunnerClaims {
  /** The pid written into claims: this process's. Tests give two instances distinct live identities. */
  readonly pid: number;

  constructor(
    readonly where: string = defaultClaimDir(),
    opts: { pid?: number } = {},
  ) {
    this.pid = opts.pid ?? process.pid;
    mkdirSync(this.where, { recursive: true, mode: 0o700 });
  }

  /** True when this process now holds `key` (and must `release` it); false when a live process does. */
  claim(key: string): boolean {
    return this.take(this.file(key), 0);
  }

  /**
   * Claims every key or none: on the first key held elsewhere, gives back those it got and says
   * which key it was and who holds it.
   */
  claimAll(keys: readonly string[]): ClaimRefusal | null {
    const got: string[] = [];
    try {
      for (const key of keys) {
        if (!this.claim(key)) {
          this.releaseAll(got);
          return { key, pid: readHolder(this.file(key)) };
        }
        got.push(key);
      }
    } catch (e) {
      this.releaseAll(got);
      throw e;
    }
    return null;
  }

  releaseAll(keys: readonly string[]): void {
    for (const key of keys) this.release(key);
  }

  release(key: string): void {
    this.drop(this.file(key));
  }

  /**
   * Which of `keys` a live process holds now, with its pid (one listing of the folder, then one read
   * per key that has a claim). A claim of a dead process is left out: claiming the key takes it over.
   */
  holders(keys: readonly string[]): Map<string, number> {
    const wanted = new Set(keys);
    const out = new Map<string, number>();
    for (const name of readdirSync(this.where)) {
      if (!name.endsWith(".claim")) continue;
      const key = name.slice(0, -".claim".length);
      if (!wanted.has(key)) continue;
      const pid = readHolder(join(this.where, name));
      if (pid !== null && alive(pid)) out.set(key, pid);
    }
    return out;
  }

  /**
   * Says (or, with null, stops saying) that the pool `id` waits: replaced whole, never seen half
   * written. A pool announces only while it has a job waiting.
   */
  announceWait(id: string, wait: Omit<WaitAnnouncement, "id" | "pid"> | null): void {
    const file = join(this.where, `${id}.wait`);
    if (!wait) {
      rmSync(file, { force: true });
      return;
    }
    const aside = `${file}.${randomBytes(4).toString("hex")}.tmp`;
    writeFileSync(aside, JSON.stringify({ id, pid: this.pid, ...wait }), { mode: 0o600 });
    renameSync(aside, file);
  }

  /**
   * The waits other pools announce (not `exceptId`'s), oldest first; those of processes that are
   * gone are removed. One listing of the folder and one read per announcement.
   */
  waiters(exceptId: string): WaitAnnouncement[] {
    const out: WaitAnnouncement[] = [];
    for (const name of readdirSync(this.where)) {
      if (!name.endsWith(".wait") || name === `${exceptId}.wait`) continue;
      const file = join(this.where, name);
      let w: WaitAnnouncement;
      try {
        w = JSON.parse(readFileSync(file, "utf8")) as WaitAnnouncement;
      } catch {
        continue; // given back meanwhile
      }
      if (!alive(w.pid)) {
        rmSync(file, { force: true });
        continue;
      }
      out.push(w);
    }
    return out.sort((a, b) => a.since - b.since || a.id.localeCompare(b.id));
  }

  private take(file: string, depth: number): boolean {
    for (let attempt = 0; attempt < 3; attempt += 1) {
      if (this.create(file)) return true;
      const holder = readHolder(file);
      if (holder === null) continue; // given back meanwhile: try again
      if (alive(holder)) return false;
      if (depth >= MAX_TAKEOVER_DEPTH || !this.removeStale(file, holder, depth)) return false;
    }
    return false;
  }

  /**
   * Removes `file` if it still names the dead `holder`. Two processes can both read the same stale
   * claim; were each to remove what it finds, the slower one would remove the claim the faster one
   * has just made, and both would hold the key. So the removal happens only under a takeover lock
   * named for the dead holder (itself a claim, taken over the same way should its maker die holding
   * it), and only after reading the claim again under that lock: whoever comes second finds the
   * first one's live pid there and leaves it. False when another process is taking it over now.
   */
  private removeStale(file: string, holder: number, depth: number): boolean {
    const lock = `${file}.takeover-${holder}`;
    if (!this.take(lock, depth + 1)) return false;
    try {
      if (readHolder(file) === holder) rmSync(file, { force: true });
    } finally {
      this.drop(lock);
    }
    return true;
  }

  /** Makes `file` naming this process, unless it exists: written aside first, then hard-linked into place. */
  private create(file: string): boolean {
    const aside = `${file}.${this.pid}-${randomBytes(4).toString("hex")}.tmp`;
    writeFileSync(aside, String(this.pid), { mode: 0o600, flag: "wx" });
    try {
      linkSync(aside, file);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      return false;
    } finally {
      rmSync(aside, { force: true });
    }
  }

  /** Removes `file` if this process holds it (a claim taken over by someone else is theirs now). */
  private drop(file: string): void {
    if (readHolder(file) === this.pid) rmSync(file, { force: true });
  }

  private file(key: string): string {
    return join(this.where, `${key}.claim`);
  }
}

/** The pid a claim names; 0 for content that names none (a dead claim); null when there is no claim. */
function readHolder(file: string): number | null {
  let text: string;
  try {
    text = readFileSync(file, "utf8").trim();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return null;
    throw new HarnessError(`cannot read the runner claim ${file} (${code ?? String(e)}): every probegate process of a runner must be able to read its claim folder (PROBEGATE_CLAIMS)`, "packing");
  }
  const pid = Number(text);
  return /^\d+$/.test(text) && Number.isSafeInteger(pid) ? pid : 0;
}

function alive(pid: number): boolean {
  if (pid <= 0) return false; // kill(0) would signal our own process group
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
