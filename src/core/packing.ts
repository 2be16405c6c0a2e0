/**
 * Which jobs start now, on which GPUs and cores: the packing decision of one runner, pure so every
 * rule is tested directly. The engine's job pool (src/engine/jobs/job-pool.ts) calls it whenever a job
 * is queued or resources come back, and does the waiting, pinning and port checks itself.
 */

/** What one job (an official-test run or a probe process) needs of the runner. */
export interface JobDemand {
  id: string;
  /** GPUs it is given alone (its CUDA_VISIBLE_DEVICES slice); 0 for a job without GPUs. */
  gpus: number;
  /** CPU cores it is pinned to alone; 0 where cores are not partitioned (it shares the unpinned rest). */
  cores: number;
  /** It times something: it never shares a GPU or a core (guaranteed by the slices), see `exclusive`. */
  timing: boolean;
  /** Nothing else runs while it does (a timing job whose cores cannot be pinned, or asked by the task). */
  exclusive: boolean;
}

/** A queued job: `seq` is its place in arrival order, `passedOver` how often later jobs started first. */
export interface WaitingJob extends JobDemand {
  seq: number;
  passedOver: number;
}

/** A job that holds its slice now. */
export interface RunningJob {
  id: string;
  gpus: readonly number[];
  cores: readonly number[];
  exclusive: boolean;
}

/** What is free now: GPU and core ids, and how many more jobs the `--jobs` budget allows. */
export interface FreeResources {
  gpus: readonly number[];
  cores: readonly number[];
  slots: number;
}

export interface JobStart {
  id: string;
  gpus: number[];
  cores: number[];
}

/** First-fit-decreasing order: most GPUs first, then most cores, then first come. */
export function ffdOrder<T extends WaitingJob>(waiting: readonly T[]): T[] {
  return [...waiting].sort((a, b) => b.gpus - a.gpus || b.cores - a.cores || a.seq - b.seq);
}

/**
 * The jobs to start now, each on the lowest-numbered free GPUs and cores it needs. Jobs are tried
 * in first-fit-decreasing order and a job that does not fit lets smaller ones past; one that has
 * been passed over `patience` times holds the runner instead (nothing behind it starts) so a large
 * or exclusive job is not starved by a stream of small ones. An exclusive job starts only on an
 * idle runner, and nothing starts beside it. `passed` names the jobs that were passed over.
 */
export function pickStarts(
  waiting: readonly WaitingJob[],
  free: FreeResources,
  running: readonly RunningJob[],
  patience: number,
): { starts: JobStart[]; passed: string[] } {
  const starts: JobStart[] = [];
  if (running.some((r) => r.exclusive)) return { starts, passed: [] };
  let gpus = [...free.gpus].sort((a, b) => a - b);
  let cores = [...free.cores].sort((a, b) => a - b);
  let slots = free.slots;
  // Skipped jobs so far; each becomes "passed over" once a job after it in the order starts.
  let skipped: string[] = [];
  const passed: string[] = [];
  for (const job of ffdOrder(waiting)) {
    const busy = running.length + starts.length > 0;
    const fits = slots > 0 && job.gpus <= gpus.length && job.cores <= cores.length && !(job.exclusive && busy);
    if (fits) {
      starts.push({ id: job.id, gpus: gpus.slice(0, job.gpus), cores: cores.slice(0, job.cores) });
      gpus = gpus.slice(job.gpus);
      cores = cores.slice(job.cores);
      slots -= 1;
      passed.push(...skipped);
      skipped = [];
      if (job.exclusive) break;
      continue;
    }
    skipped.push(job.id);
    if (job.passedOver >= patience) break;
  }
  return { starts, passed };
}

/** The runner as the packing sees it: how many GPUs and cores jobs can be given. */
export interface RunnerShape {
  gpus: number;
  cores: number;
}

/**
 * Jobs that can never run on this runner (more GPUs or cores than it has), as one sentence each:
 * checked before anything runs, so an evaluation fails at once instead of waiting forever.
 */
export function unfitJobs(demands: readonly JobDemand[], shape: RunnerShape): string[] {
  const out: string[] = [];
  for (const d of demands) {
    if (d.gpus > shape.gpus) out.push(`${d.id} needs ${d.gpus} GPU${d.gpus === 1 ? "" : "s"}, the runner has ${shape.gpus}`);
    else if (d.cores > shape.cores) out.push(`${d.id} needs ${d.cores} cores, the runner has ${shape.cores}`);
  }
  return out;
}

/**
 * The shortest any packing can take: max(longest job, Σ units·time / capacity), units being GPUs
 * on a GPU runner and cores on a CPU one (PROBES.md). Zero-unit jobs count only through the first term.
 */
export function makespanLowerBound(jobs: ReadonlyArray<{ units: number; seconds: number }>, capacity: number): number {
  if (jobs.length === 0) return 0;
  const longest = Math.max(...jobs.map((j) => j.seconds));
  const area = jobs.reduce((s, j) => s + j.units * j.seconds, 0);
  return Math.max(longest, capacity > 0 ? area / capacity : 0);
}

/** torch's default rendezvous port: never handed out, whatever else on the machine may assume it. */
export const TORCH_DEFAULT_PORT = 29500;

/**
 * The next rendezvous port after `last` in [from, to], skipping those in use and torch's default.
 * Ports rotate rather than restart at `from`, so a port is reused as late as possible (a socket
 * of the job before may still be in TIME_WAIT). Null when every port of the range is taken.
 */
export function nextPort(inUse: ReadonlySet<number>, last: number, range: { from: number; to: number }): number | null {
  const size = range.to - range.from + 1;
  for (let i = 1; i <= size; i += 1) {
    const p = range.from + ((((last - range.from + i) % size) + size) % size);
    if (p !== TORCH_DEFAULT_PORT && !inUse.has(p)) return p;
  }
  return null;
}

/** "0-3,6": a compact list of ids, as taskset and Cpus_allowed_list write them. */
export function formatIdList(ids: readonly number[]): string {
  const sorted = [...ids].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === (sorted[j] as number) + 1) j += 1;
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(",");
}

/** Parses "0-3,6" (Cpus_allowed_list, `--cores 0-7`); null for anything else. */
export function parseIdList(text: string): number[] | null {
  const ids: number[] = [];
  for (const part of text.trim().split(",")) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) return null;
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    if (b < a) return null;
    for (let i = a; i <= b; i += 1) ids.push(i);
  }
  return [...new Set(ids)].sort((x, y) => x - y);
}
