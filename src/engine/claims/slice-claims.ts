import { pickStarts, type FreeResources, type JobStart, type RunningJob, type WaitingJob } from "../../core/packing.js";
import type { ClaimRefusal, RunnerClaims, WaitAnnouncement } from "./runner-claims.js";

/** The claim keys of a job slice's GPUs and cores (runner-claims.ts). */
export const gpuKey = (g: number) => `gpu-${g}`;
export const coreKey = (c: number) => `core-${c}`;
export const sliceKeys = (gpus: readonly number[], cores: readonly number[]) => [...gpus.map(gpuKey), ...cores.map(coreKey)];

/** "GPU 0: pid 4242" for a claim key and its holder; "core 3: left to pid 4242" for one kept for another pool's turn. */
function holdLabel(key: string, pid: number | null, leftTo: boolean): string {
  const what = key.replace(/^gpu-/, "GPU ").replace(/^core-/, "core ");
  return pid ? `${what}: ${leftTo ? "left to " : ""}pid ${pid}` : what;
}

/**
 * What other probegate processes of the runner (or other pools of this process) hold of what is
 * free in one job pool: claim key → holder's pid (null where it could not be read).
 */
export class HeldElsewhere {
  /** Keys free but left to another pool whose job waits longer (`leaveTurns`). */
  private readonly leftTo = new Set<string>();

  private constructor(private readonly held: Map<string, number | null>) {}

  /** Nothing held elsewhere, without looking (no job waits). */
  static none(): HeldElsewhere {
    return new HeldElsewhere(new Map());
  }

  /** Looks at the claims of these free GPUs and cores (one listing of the claim folder). */
  static look(claims: RunnerClaims, free: { gpus: readonly number[]; cores: readonly number[] }): HeldElsewhere {
    return new HeldElsewhere(new Map(claims.holders(sliceKeys(free.gpus, free.cores))));
  }

  /**
   * Leaves other pools their turn: for each of `waits` (the pools whose oldest waiting job is older
   * than any of this pool's, oldest first), as many of `free`'s GPUs and cores as its job needs,
   * among those it can use, count as held by it. Without this, a pool that gives back a GPU hands
   * it straight to its own next job while the others look again only every 300 ms: on the H200,
   * three `validate --power` processes whose jobs each took the one GPU ran 7 evaluations of one
   * task in a call and none of the other two.
   */
  leaveTurns(waits: readonly WaitAnnouncement[], free: { gpus: readonly number[]; cores: readonly number[] }): void {
    for (const w of waits) {
      const usable = new Set(w.keys);
      const pick = (keys: string[], n: number) => keys.filter((k) => usable.has(k) && !this.held.has(k)).slice(0, n);
      for (const key of [...pick(free.gpus.map(gpuKey), w.gpus), ...pick(free.cores.map(coreKey), w.cores)]) {
        this.held.set(key, w.pid);
        this.leftTo.add(key);
      }
    }
  }

  /** A key found held when claiming it (claimed after the look). */
  add(r: ClaimRefusal): void {
    this.held.set(r.key, r.pid);
  }

  /** `free` less what is held elsewhere: what the packing decision may hand out. */
  subtract(free: FreeResources): FreeResources {
    return { gpus: free.gpus.filter((g) => !this.held.has(gpuKey(g))), cores: free.cores.filter((c) => !this.held.has(coreKey(c))), slots: free.slots };
  }

  /**
   * The waiting jobs that would start now were nothing held elsewhere (the packing decision run on
   * `free` whole), each with what it waits for: the held GPUs or cores, whichever it has too few of
   * without them, that it would then get ("GPU 0: pid 4242"). Empty when nothing waits for them.
   */
  blocking(waiting: readonly WaitingJob[], free: FreeResources, running: readonly RunningJob[], patience: number): Map<string, string[]> {
    const out = new Map<string, string[]>();
    if (this.held.size === 0 || waiting.length === 0) return out;
    const left = this.subtract(free);
    for (const s of pickStarts(waiting, free, running, patience).starts) {
      const job = waiting.find((w) => w.id === s.id);
      const short = [...(job && job.gpus > left.gpus.length ? s.gpus.map(gpuKey) : []), ...(job && job.cores > left.cores.length ? s.cores.map(coreKey) : [])];
      out.set(
        s.id,
        short.filter((k) => this.held.has(k)).map((k) => holdLabel(k, this.held.get(k) ?? null, this.leftTo.has(k))),
      );
    }
    return out;
  }
}

/** Claims the GPUs and cores of every start across the runner, all or nothing; the refusal when one was held. */
export function claimSlices(claims: RunnerClaims, starts: readonly JobStart[]): ClaimRefusal | null {
  const got: string[] = [];
  try {
    for (const s of starts) {
      const keys = sliceKeys(s.gpus, s.cores);
      const refused = claims.claimAll(keys);
      if (refused) {
        claims.releaseAll(got);
        return refused;
      }
      got.push(...keys);
    }
  } catch (e) {
    claims.releaseAll(got);
    throw e;
  }
  return null;
}
