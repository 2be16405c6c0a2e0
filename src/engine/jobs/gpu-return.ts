import { formatBytes } from "../../core/sizes.js";
import { readGpuUsed } from "../gpu-meter.js";

const MIB = 1024 * 1024;

export interface GpuReturnOptions {
  nvidiaSmi?: string;
  /** How long a GPU may take to get back to its baseline before it is withdrawn (default 60 s). */
  reuseTimeoutMs?: number;
  /** Memory above the idle baseline that still counts as "back" (default 64 MiB). */
  toleranceBytes?: number;
}

/**
 * Whether a GPU a job held is back at its idle memory, so the pool can give it to the next job: each
 * GPU's baseline is read when the pool first claims it, and one that does not get back to it in time
 * (or whose memory cannot be read) is withdrawn for the rest of the pool's life, with a note.
 */
export class GpuReturn {
  /** Each GPU's idle memory, read when the pool first claimed it (`readBaselines` says why then). */
  private readonly baselines = new Map<number, number>();
  readonly withdrawn = new Set<number>();

  constructor(
    private readonly opts: GpuReturnOptions,
    /** Where a withdrawal is said (the pool's notes, which a result repeats). */
    private readonly notes: string[],
  ) {}

  /**
   * Reads the idle memory of those of `gpus` this pool has not claimed before, while it holds their
   * claims: no other probegate process's job is on them then, since a claim is given back only once
   * its GPU is back at its holder's baseline, whereas when the pool is made another process's job
   * may be. It is read once per pool and GPU, not again at each claim, so memory a job leaves within
   * the tolerance does not become the next baseline; and it is not recorded in the claim folder for
   * later processes, where it would outlive what it measured (a display server or MPS daemon
   * started since, a driver upgrade) with nothing to say it went stale.
   */
  async readBaselines(gpus: readonly number[]): Promise<void> {
    const fresh = gpus.filter((g) => !this.baselines.has(g));
    if (fresh.length === 0) return;
    const used = await readGpuUsed(fresh, { nvidiaSmi: this.opts.nvidiaSmi });
    for (const [g, bytes] of used ?? []) this.baselines.set(g, bytes);
  }

  /**
   * Waits until each GPU reads back at its baseline and returns those that did; one that does not, or
   * whose idle memory could not be read, is withdrawn.
   */
  async waitBack(gpus: readonly number[]): Promise<number[]> {
    const tolerance = this.opts.toleranceBytes ?? 64 * MIB;
    const until = performance.now() + (this.opts.reuseTimeoutMs ?? 60_000);
    const unknown = gpus.filter((g) => !this.baselines.has(g));
    let pending = gpus.filter((g) => this.baselines.has(g));
    let last: Map<number, number> | null = null;
    while (pending.length > 0) {
      last = await readGpuUsed(pending, { nvidiaSmi: this.opts.nvidiaSmi });
      if (last) pending = pending.filter((g) => (last?.get(g) ?? Infinity) > (this.baselines.get(g) ?? 0) + tolerance);
      if (pending.length === 0 || performance.now() > until) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    for (const g of [...unknown, ...pending]) {
      this.withdrawn.add(g);
      const used = last?.get(g);
      this.notes.push(`GPU ${g} withdrawn: ${used === undefined ? "its memory could not be read" : `it still held ${formatBytes(Math.max(0, used - (this.baselines.get(g) ?? 0)))} above its idle baseline`} after its job ended`);
    }
    return gpus.filter((g) => !this.withdrawn.has(g));
  }
}
