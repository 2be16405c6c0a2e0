import { parseIdList } from "../core/packing.js";
import { InputError } from "../engine/errors.js";
import { availableCpus, detectGpus } from "../engine/host.js";
import { JobPool } from "../engine/jobs/job-pool.js";

/** The runner budget flags shared by `eval` and `demo`. */
export interface BudgetFlags {
  gpus?: string;
  cores?: string;
  jobs?: string;
}

/** `--gpus all | none | 0,1` → the indices asked for (undefined: all). */
export function parseGpus(value: string | undefined): number[] | undefined {
  if (value === undefined || value === "all") return undefined;
  if (value === "none") return [];
  const list = parseIdList(value);
  if (!list) throw new InputError(`--gpus: expected 'all', 'none' or indices like 0,1 or 0-3 — got '${value}'.`, { field: "--gpus" });
  return list;
}

/** `--cores 8` (the first 8 this process may use) or `--cores 0-7` (those ids). */
export function parseCores(value: string | undefined, available: readonly number[]): number[] {
  if (value === undefined) return [...available];
  if (/^\d+$/.test(value)) {
    const n = Number(value);
    if (n < 1 || n > available.length) throw new InputError(`--cores: expected 1 to ${available.length} (the cores this process may use), got '${value}'.`, { field: "--cores" });
    return available.slice(0, n);
  }
  const ids = parseIdList(value);
  const missing = ids?.filter((i) => !available.includes(i)) ?? [];
  if (!ids || missing.length) {
    throw new InputError(`--cores: expected a count or ids like 0-7 among this process's cores (${available.length ? `${available[0]}-${available[available.length - 1]}` : "none"}), got '${value}'${missing.length ? `; ${missing.join(", ")} not available` : ""}.`, { field: "--cores" });
  }
  return ids;
}

/**
 * The runner's job pool from `--gpus`, `--cores` and `--jobs`, and how many evaluations to keep in
 * progress at once: `--jobs` when given (then also the most jobs running at once), else half the
 * cores (a job of two ranks per two cores), between 1 and 16.
 */
export async function poolFromFlags(flags: BudgetFlags): Promise<{ pool: JobPool; evaluations: number }> {
  const wanted = parseGpus(flags.gpus);
  const present = (await detectGpus()).map((g) => g.index);
  const absent = (wanted ?? []).filter((g) => !present.includes(g));
  if (absent.length) throw new InputError(`--gpus: GPU ${absent.join(", ")} is not on this runner (nvidia-smi lists ${present.length ? present.join(", ") : "none"}).`, { field: "--gpus" });
  const cores = parseCores(flags.cores, availableCpus());
  let jobs: number | undefined;
  if (flags.jobs !== undefined) {
    jobs = Number(flags.jobs);
    if (!Number.isInteger(jobs) || jobs < 1) throw new InputError(`--jobs: expected a whole number ≥ 1, got '${flags.jobs}'.`, { field: "--jobs" });
  }
  const pool = await JobPool.create({ gpus: wanted ?? present, cores, maxJobs: jobs });
  return { pool, evaluations: jobs ?? Math.min(16, Math.max(1, Math.floor(cores.length / 2))) };
}

/** Runs `fn` over `items`, at most `limit` at once; results in the items' order. */
export async function mapConcurrent<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}
