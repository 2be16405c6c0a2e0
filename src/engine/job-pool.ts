import { createServer } from "node:net";
import { formatIdList, nextPort, pickStarts, type JobDemand, type RunningJob, type WaitingJob } from "../core/packing.js";
import { formatBytes } from "../core/sizes.js";
import { HarnessError } from "./errors.js";
import { readGpuUsed } from "./gpu-meter.js";
import { RunnerClaims } from "./runner-claims.js";

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
  /** Gives the slice back; its GPUs return to the pool once their memory is back at baseline. */
  release(): Promise<void>;
}

export interface JobPoolOptions {
  /** GPU indices (as nvidia-smi numbers them) the pool may hand out. */
  gpus: readonly number[];
  /** CPU ids the pool may hand out. */
  cores: readonly number[];
  /** At most this many jobs at once (`--jobs`); default: as many as the GPUs and cores allow. */
  maxJobs?: number;
  nvidiaSmi?: string;
  /** How long a GPU may take to get back to its baseline before it is withdrawn (default 60 s). */
  reuseTimeoutMs?: number;
  /** Memory above the idle baseline that still counts as "back" (default 64 MiB). */
  toleranceBytes?: number;
  portRange?: { from: number; to: number };
  /** Folder of port claims shared by the probegate processes of this runner (default: one per user under the temp dir). */
  portClaimDir?: string;
  /** Times a job may be overtaken by smaller ones before it holds the runner (default 8). */
  patience?: number;
}

interface Waiter extends WaitingJob {
  enqueuedAt: number;
  resolve: (l: JobLease) => void;
  reject: (e: Error) => void;
}

const MIB = 1024 * 1024;

/** Whether nothing listens on 127.0.0.1:port now (so a rank 0 can bind it). */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen({ port, host: "127.0.0.1", exclusive: true }, () => s.close(() => resolve(true)));
  });
}

/**
 * The runner's GPUs, cores and rendezvous ports, shared by every job of every evaluation this
 * process runs. Jobs queue with what they need; the packing decision (core/packing.ts) says which
 * start. A GPU goes to the next job only once nvidia-smi reads it back at its idle baseline; one
 * that does not get back in time is withdrawn, and jobs that can then never fit fail at once.
 */
export class JobPool {
  readonly gpus: readonly number[];
  readonly cores: readonly number[];
  /** What happened to the runner that a result should say (a GPU withdrawn, say). */
  readonly notes: string[] = [];
  private freeGpus: number[];
  private freeCores: number[];
  private readonly running = new Map<string, RunningJob>();
  private readonly waiting: Waiter[] = [];
  private readonly ports = new Set<number>();
  private readonly claims: RunnerClaims;
  private lastPort: number;
  private seq = 0;
  private scheduled = false;
  private baselines: Map<number, number> | null = null;
  private withdrawn = new Set<number>();

  private constructor(private readonly opts: JobPoolOptions) {
    this.gpus = [...opts.gpus].sort((a, b) => a - b);
    this.cores = [...opts.cores].sort((a, b) => a - b);
    this.freeGpus = [...this.gpus];
    this.freeCores = [...this.cores];
    this.lastPort = (opts.portRange ?? PORTS).from - 1;
    this.claims = new RunnerClaims(opts.portClaimDir);
  }

  /** A pool over these GPUs and cores; each GPU's idle memory is read now, as its baseline. */
  static async create(opts: JobPoolOptions): Promise<JobPool> {
    const pool = new JobPool(opts);
    pool.baselines = await readGpuUsed(pool.gpus, { nvidiaSmi: opts.nvidiaSmi });
    return pool;
  }

  /** GPUs and cores jobs can still be given (withdrawn GPUs left out). */
  shape(): { gpus: number; cores: number } {
    return { gpus: this.gpus.length - this.withdrawn.size, cores: this.cores.length };
  }

  /** Waits for a slice that fits `demand` (its id must be unique among the jobs queued or running). */
  acquire(demand: JobDemand): Promise<JobLease> {
    const problem = this.neverFits(demand);
    if (problem) return Promise.reject(new HarnessError(problem, "packing"));
    return new Promise((resolve, reject) => {
      this.waiting.push({ ...demand, seq: this.seq++, passedOver: 0, enqueuedAt: performance.now(), resolve, reject });
      this.requestSchedule();
    });
  }

  private neverFits(d: JobDemand): string | null {
    const s = this.shape();
    if (d.gpus > s.gpus) return `${d.id} needs ${d.gpus} GPUs; this runner has ${s.gpus} usable${this.withdrawn.size ? ` (GPU ${[...this.withdrawn].join(", ")} withdrawn: memory not back at baseline)` : ""}`;
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
      this.schedule();
    });
  }

  private schedule(): void {
    const slots = (this.opts.maxJobs ?? Number.POSITIVE_INFINITY) - this.running.size;
    const { starts, passed } = pickStarts(this.waiting, { gpus: this.freeGpus, cores: this.freeCores, slots }, [...this.running.values()], this.opts.patience ?? 8);
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
  }

  private async handOut(w: Waiter, gpus: number[], cores: number[]): Promise<JobLease> {
    const port = await this.takePort();
    let released = false;
    return {
      id: w.id,
      gpus,
      cores,
      port,
      waitedS: (performance.now() - w.enqueuedAt) / 1000,
      release: async () => {
        if (released) return;
        released = true;
        this.ports.delete(port);
        this.claims.release(`port-${port}`);
        this.freeCores.push(...cores);
        this.running.delete(w.id);
        // Its cores (and the --jobs slot) are free now; its GPUs once they are back at baseline.
        if (gpus.length) this.requestSchedule();
        await this.drain(gpus);
        this.requestSchedule();
      },
    };
  }

  private async takePort(): Promise<number> {
    const range = this.opts.portRange ?? PORTS;
    for (let tries = 0; tries <= range.to - range.from; tries += 1) {
      const p = nextPort(this.ports, this.lastPort, range);
      if (p === null) break;
      this.lastPort = p;
      this.ports.add(p);
      // Claimed first (no other probegate process on this runner hands it out), then checked free.
      if (this.claims.claim(`port-${p}`)) {
        if (await portFree(p)) return p;
        this.claims.release(`port-${p}`);
      }
      this.ports.delete(p);
    }
    throw new HarnessError(`no free rendezvous port in ${range.from}-${range.to} on 127.0.0.1`, "packing");
  }

  /** Waits until each GPU reads back at its baseline, then frees it; one that does not is withdrawn. */
  private async drain(gpus: number[]): Promise<void> {
    if (gpus.length === 0) return;
    const base = this.baselines;
    const tolerance = this.opts.toleranceBytes ?? 64 * MIB;
    const until = performance.now() + (this.opts.reuseTimeoutMs ?? 60_000);
    let pending = [...gpus];
    let last: Map<number, number> | null = null;
    while (base && pending.length > 0) {
      last = await readGpuUsed(pending, { nvidiaSmi: this.opts.nvidiaSmi });
      if (last) pending = pending.filter((g) => (last?.get(g) ?? Infinity) > (base.get(g) ?? 0) + tolerance);
      if (pending.length === 0 || performance.now() > until) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    for (const g of pending) {
      this.withdrawn.add(g);
      const used = last?.get(g);
      this.notes.push(`GPU ${g} withdrawn: ${used === undefined ? "its memory could not be read" : `it still held ${formatBytes(Math.max(0, used - (base?.get(g) ?? 0)))} above its idle baseline`} after its job ended`);
    }
    this.freeGpus.push(...gpus.filter((g) => !this.withdrawn.has(g)));
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
}

/** Rendezvous ports handed to jobs: above torch's default 29500, which other software assumes. */
export const PORTS = { from: 29600, to: 29999 };
