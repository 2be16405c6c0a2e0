import { randomBytes } from "node:crypto";
import { formatIdList, pickStarts, type JobDemand, type RunningJob, type WaitingJob } from "../../core/packing.js";
import { HarnessError } from "../errors.js";
import { GpuReturn, type GpuReturnOptions } from "./gpu-return.js";
import { RunnerClaims } from "../claims/runner-claims.js";
import { RendezvousPorts } from "./ports.js";
import { claimSlices, coreKey, gpuKey, HeldElsewhere, sliceKeys } from "../claims/slice-claims.js";

/** A job's slice of the runner, held from `acquire` until `release`. */
export interface JobLease {
  id: string;
  gpus: number[];
  /** Cores it is pinned to (taskset); empty where cores are not partitioned. */
  cores: number[];
  /** Its own rendezvous port (MASTER_PORT), free when handed out, never torch's default 29500. */
  port: number;
  /** Seconds it waited in the queue for its slice. */
  waitedS: number;
  /** What it waited for that another probegate process of the runner held: "GPU 0: pid 4242". */
  blockedBy: string[];
  /** Gives the slice back; its GPUs return to the pool once their memory is back at baseline. */
  release(): Promise<void>;
}

export interface JobPoolOptions extends GpuReturnOptions {
  /** GPU indices (as nvidia-smi numbers them) the pool may hand out. */
  gpus: readonly number[];
  /** CPU ids the pool may hand out. */
  cores: readonly number[];
  /** At most this many jobs at once (`--jobs`); default: as many as the GPUs and cores allow. */
  maxJobs?: number;
  portRange?: { from: number; to: number };
  /**
   * Folder of the claims (ports, sandbox uids, GPUs, cores) shared by the probegate processes of this
   * runner (default: runner-claims.ts, one per user, or $PROBEGATE_CLAIMS).
   */
  claimDir?: string;
  /** Times a job may be overtaken by smaller ones before it holds the runner (default 8). */
  patience?: number;
}

interface Waiter extends WaitingJob {
  enqueuedAt: number;
  /** Date.now() when queued: other processes compare it with their own jobs' (announceWait). */
  enqueuedWall: number;
  blockedBy: Set<string>;
  resolve: (l: JobLease) => void;
  reject: (e: Error) => void;
}

/** How often the queue is decided again while a job waits for something another process holds. */
const FOREIGN_RECHECK_MS = 300;

/**
 * The runner's GPUs, cores and rendezvous ports, shared by every job of every evaluation this
 * process runs. Jobs queue with what they need; the packing decision (core/packing.ts) says which
 * start. A GPU goes to the next job only once nvidia-smi reads it back at its idle baseline; one
 * that does not get back in time is withdrawn, and jobs that can then never fit fail at once.
 * Other probegate processes on the runner (another runner agent's Action, a `validate --power`
 * beside an `eval`) may have been given the same GPUs and cores: a job claims its GPUs and pinned
 * cores across processes (runner-claims.ts) as it starts, and what another process holds is busy
 * here until that process gives it back.
 */
export class JobPool {
  readonly gpus: readonly number[];
  readonly cores: readonly number[];
  /** What happened to the runner that a result should say (a GPU withdrawn, say). */
  readonly notes: string[] = [];
  /** Not held by a job of this pool (another process may hold one: `schedule` asks the claims). */
  private freeGpus: number[];
  private freeCores: number[];
  private readonly running = new Map<string, RunningJob>();
  private readonly waiting: Waiter[] = [];
  private readonly ports: RendezvousPorts;
  private readonly claims: RunnerClaims;
  private seq = 0;
  private scheduled = false;
  /** Whether a GPU is back at its idle memory after a job, and which never came back. */
  private readonly returns: GpuReturn;
  /** The next look at the claims, set only while a job waits for something another process holds. */
  private recheck: NodeJS.Timeout | null = null;
  /** This pool's name in wait announcements (one process may run several pools). */
  private readonly waitId = `${process.pid}-${randomBytes(4).toString("hex")}`;
  /** What this pool last announced of its waiting (JSON), so an unchanged wait is not written again. */
  private announced = "";

  private constructor(private readonly opts: JobPoolOptions) {
    this.gpus = [...opts.gpus].sort((a, b) => a - b);
    this.cores = [...opts.cores].sort((a, b) => a - b);
    this.freeGpus = [...this.gpus];
    this.freeCores = [...this.cores];
    this.claims = new RunnerClaims(opts.claimDir);
    this.ports = new RendezvousPorts(this.claims, opts.portRange);
    this.returns = new GpuReturn(opts, this.notes);
  }

  /** A pool over these GPUs and cores; each GPU's idle memory is read when the pool first claims it. */
  static async create(opts: JobPoolOptions): Promise<JobPool> {
    return new JobPool(opts);
  }

  /** GPUs and cores jobs can still be given (withdrawn GPUs left out). */
  shape(): { gpus: number; cores: number } {
    return { gpus: this.gpus.length - this.returns.withdrawn.size, cores: this.cores.length };
  }

  /** Waits for a slice that fits `demand` (its id must be unique among the jobs queued or running). */
  acquire(demand: JobDemand): Promise<JobLease> {
    const problem = this.neverFits(demand);
    if (problem) return Promise.reject(new HarnessError(problem, "packing"));
    return new Promise((resolve, reject) => {
      this.waiting.push({ ...demand, seq: this.seq++, passedOver: 0, enqueuedAt: performance.now(), enqueuedWall: Date.now(), blockedBy: new Set(), resolve, reject });
      this.requestSchedule();
    });
  }

  private neverFits(d: JobDemand): string | null {
    const s = this.shape();
    if (d.gpus > s.gpus) return `${d.id} needs ${d.gpus} GPUs; this runner has ${s.gpus} usable${this.returns.withdrawn.size ? ` (GPU ${[...this.returns.withdrawn].join(", ")} withdrawn: memory not back at baseline)` : ""}`;
    if (d.cores > s.cores) return `${d.id} needs ${d.cores} cores; this runner has ${s.cores}`;
    return null;
  }

  /**
   * Decides once the current turn of the event loop is done, so jobs queued together (an
   * evaluation's probes) are ordered together: first-fit-decreasing needs the whole set.
   */
  private requestSchedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      try {
        this.schedule();
      } catch (e) {
        // The claim folder could not be read or written: no job can be started safely.
        for (const w of this.waiting.splice(0)) w.reject(e as Error);
      }
    });
  }

  private schedule(): void {
    if (this.waiting.length === 0) return this.watch(HeldElsewhere.none());
    const slots = (this.opts.maxJobs ?? Number.POSITIVE_INFINITY) - this.running.size;
    const patience = this.opts.patience ?? 8;
    // What other processes hold of what is free here, looked at before deciding so the decision
    // never hands it out. A claim made since the look is met when claiming: decided again without it.
    const free = { gpus: this.freeGpus, cores: this.freeCores };
    const elsewhere = HeldElsewhere.look(this.claims, free);
    // Turns across processes go by age: what another pool's older waiting job needs is left to it.
    const mine = this.oldestWaiting();
    elsewhere.leaveTurns(this.claims.waiters(this.waitId).filter((w) => w.since < mine || (w.since === mine && w.id < this.waitId)), free);
    for (;;) {
      const { starts, passed } = pickStarts(this.waiting, elsewhere.subtract({ gpus: this.freeGpus, cores: this.freeCores, slots }), [...this.running.values()], patience);
      const refused = claimSlices(this.claims, starts);
      if (refused) {
        elsewhere.add(refused);
        continue;
      }
      for (const id of passed) {
        const w = this.waiting.find((x) => x.id === id);
        if (w) w.passedOver += 1;
      }
      for (const s of starts) {
        const i = this.waiting.findIndex((w) => w.id === s.id);
        const [w] = this.waiting.splice(i, 1);
        if (!w) continue;
        this.freeGpus = this.freeGpus.filter((g) => !s.gpus.includes(g));
        this.freeCores = this.freeCores.filter((c) => !s.cores.includes(c));
        this.running.set(w.id, { id: w.id, gpus: s.gpus, cores: s.cores, exclusive: w.exclusive });
        this.handOut(w, s.gpus, s.cores).then(w.resolve, w.reject);
      }
      break;
    }
    this.watch(elsewhere);
  }

  /**
   * Another process gives its claims back without a word to this one, so while a waiting job would
   * start were it not for their claims, the queue is decided again every FOREIGN_RECHECK_MS; with
   * no such job there is no timer. Each such job notes what it waits for, and whose it is.
   */
  private watch(elsewhere: HeldElsewhere): void {
    const slots = (this.opts.maxJobs ?? Number.POSITIVE_INFINITY) - this.running.size;
    const blocking = elsewhere.blocking(this.waiting, { gpus: this.freeGpus, cores: this.freeCores, slots }, [...this.running.values()], this.opts.patience ?? 8);
    for (const [id, what] of blocking) {
      const w = this.waiting.find((x) => x.id === id);
      for (const label of what) w?.blockedBy.add(label);
    }
    this.announce(blocking);
    if (blocking.size > 0 && !this.recheck) {
      this.recheck = setTimeout(() => {
        this.recheck = null;
        this.requestSchedule();
      }, FOREIGN_RECHECK_MS);
    } else if (blocking.size === 0 && this.recheck) {
      clearTimeout(this.recheck);
      this.recheck = null;
    }
  }

  /** Date.now() of the oldest job waiting here (Infinity with none). */
  private oldestWaiting(): number {
    return this.waiting.reduce((t, w) => Math.min(t, w.enqueuedWall), Number.POSITIVE_INFINITY);
  }

  /**
   * Tells the runner's other pools that a job here waits for what they hold or leave to others
   * (since its oldest waiting job was queued, and what the oldest of the blocked jobs needs), or
   * that none does. Another pool leaves that much of what it frees to this one while this one's
   * wait is the older (`leaveTurns`).
   */
  private announce(blocking: ReadonlyMap<string, string[]>): void {
    const blocked = this.waiting.filter((w) => blocking.has(w.id)).sort((a, b) => a.enqueuedWall - b.enqueuedWall)[0];
    const wait = blocked ? { since: this.oldestWaiting(), gpus: blocked.gpus, cores: blocked.cores, keys: sliceKeys(this.gpus, this.cores) } : null;
    const text = wait ? JSON.stringify(wait) : "";
    if (text === this.announced) return;
    this.claims.announceWait(this.waitId, wait);
    this.announced = text;
  }

  private async handOut(w: Waiter, gpus: number[], cores: number[]): Promise<JobLease> {
    let port: number;
    try {
      await this.returns.readBaselines(gpus);
      port = await this.ports.take();
    } catch (e) {
      // Nothing ran on the slice: it is free again at once, here and across the runner.
      this.running.delete(w.id);
      this.freeGpus.push(...gpus);
      this.freeCores.push(...cores);
      this.claims.releaseAll(sliceKeys(gpus, cores));
      this.requestSchedule();
      throw e;
    }
    let released = false;
    return {
      id: w.id,
      gpus,
      cores,
      port,
      waitedS: (performance.now() - w.enqueuedAt) / 1000,
      blockedBy: [...w.blockedBy],
      release: async () => {
        if (released) return;
        released = true;
        this.ports.give(port);
        for (const c of cores) this.claims.release(coreKey(c));
        this.freeCores.push(...cores);
        this.running.delete(w.id);
        // Its cores (and the --jobs slot) are free now; its GPUs once they are back at baseline.
        if (gpus.length) this.requestSchedule();
        await this.drain(gpus);
        this.requestSchedule();
      },
    };
  }

  /**
   * Waits until each GPU reads back at its baseline (GpuReturn), then frees it here and gives back its
   * claim. A withdrawn GPU keeps its claim while this process lives, so no other process puts a job
   * beside what still holds its memory.
   */
  private async drain(gpus: number[]): Promise<void> {
    if (gpus.length === 0) return;
    const back = await this.returns.waitBack(gpus);
    for (const g of back) this.claims.release(gpuKey(g));
    this.freeGpus.push(...back);
    // Jobs that can no longer ever fit fail now rather than wait forever.
    for (const w of [...this.waiting]) {
      const problem = this.neverFits(w);
      if (problem) {
        this.waiting.splice(this.waiting.indexOf(w), 1);
        w.reject(new HarnessError(problem, "packing"));
      }
    }
  }

  /** "gpus 0,1 · cores 0-7 · port 29601" for progress lines. */
  static describe(l: Pick<JobLease, "gpus" | "cores" | "port">): string {
    const parts = [l.gpus.length ? `GPU ${formatIdList(l.gpus)}` : null, l.cores.length ? `cores ${formatIdList(l.cores)}` : null, `port ${l.port}`];
    return parts.filter(Boolean).join(" · ");
  }

  /** ", behind another probegate process (GPU 0: pid 4242)" for a job's start line; "" when it waited for none. */
  static waitNote(l: Pick<JobLease, "blockedBy">): string {
    return l.blockedBy.length ? `, behind another probegate process (${l.blockedBy.join(", ")})` : "";
  }
}
