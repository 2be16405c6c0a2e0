import type { JobRecord } from "../../core/result.js";
import { startGpuMeter, type GpuMemoryPeak } from "../gpu-meter.js";
import type { JobContext } from "./job-env.js";
import { JobPool, type JobLease } from "./job-pool.js";
import { jobContextFor, type JobBase, type PlannedJob } from "./job-plan.js";

/** What a job's body is given: its context on its slice, and whether its GPUs are over the limit now. */
export interface SliceRun {
  ctx: JobContext;
  lease: JobLease;
  gpuMemoryExceeded: () => boolean;
}

/**
 * Runs the jobs of one evaluation on slices of the shared pool: each job waits for its slice, runs
 * with its own GPU meter (the memory of record and the limit are per job, on GPUs it holds alone),
 * and is recorded with its GPUs, cores, port, start and end. Time spent waiting while none of the
 * evaluation's jobs runs is reported through `onIdleWait`, so it does not count against the
 * evaluation's wall clock.
 */
export class SliceRunner {
  readonly records: JobRecord[] = [];
  readonly peaks = new Map<string, GpuMemoryPeak>();
  private active = 0;
  private idleSince = 0;

  constructor(
    private readonly o: {
      pool: JobPool;
      /** performance.now() when the evaluation began; records are in seconds from then. */
      t0: number;
      base: JobBase;
      gpuLimitBytes?: number;
      onIdleWait?: (ms: number) => void;
    },
  ) {}

  async run<T>(job: PlannedJob, body: (s: SliceRun) => Promise<T>): Promise<T> {
    const asked = performance.now();
    const lease = await this.o.pool.acquire(job.demand);
    // Queued with none of this evaluation's jobs running: that wait is the runner's, not the evaluation's.
    if (this.active === 0) this.o.onIdleWait?.(performance.now() - Math.max(asked, this.idleSince));
    this.active += 1;
    const started = performance.now();
    try {
      const meter = await startGpuMeter(lease.gpus, { limitBytes: this.o.gpuLimitBytes });
      let value: T;
      try {
        value = await body({ ctx: jobContextFor(this.o.base, job, lease), lease, gpuMemoryExceeded: () => meter.overLimit() });
      } finally {
        const peak = await meter.stop();
        if (peak) this.peaks.set(job.name, peak);
      }
      return value;
    } finally {
      const ended = performance.now();
      this.active -= 1;
      if (this.active === 0) this.idleSince = ended;
      this.records.push({
        id: job.name,
        kind: job.kind,
        gpus: lease.gpus,
        cores: lease.cores,
        port: lease.port,
        timing: job.demand.timing,
        exclusive: job.demand.exclusive,
        startS: (started - this.o.t0) / 1000,
        endS: (ended - this.o.t0) / 1000,
        waitedS: lease.waitedS,
      });
      // Cores and port are free at once; the GPUs once nvidia-smi reads them back at baseline.
      void lease.release();
    }
  }

  /** The probe phase's GPU memory of record: the probe job that held the most above its baseline. */
  probesPeak(): GpuMemoryPeak | null {
    let best: GpuMemoryPeak | null = null;
    for (const [name, p] of this.peaks) if (!name.startsWith("official") && (!best || p.peakBytes > best.peakBytes)) best = p;
    return best;
  }

  /** GPU-seconds of record: Σ over jobs of GPUs held × time held (jobs side by side each count). */
  gpuSeconds(): number {
    return this.records.reduce((s, r) => s + r.gpus.length * (r.endS - r.startS), 0);
  }
}
