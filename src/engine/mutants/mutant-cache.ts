import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { InputError } from "../errors.js";

/** What the cache keeps of one evaluated mutant (or of the reference). */
export const CachedOutcomeSchema = z.strictObject({
  outcome: z.enum(["killedByOfficial", "killedByProbes", "survived", "timedOut", "error"]),
  passedOfficial: z.boolean(),
  detail: z.string(),
  durationS: z.number().min(0),
  /** The phases' own durations (the reference's set the mutants' wall clock). */
  officialS: z.number().min(0),
  probesS: z.number().min(0),
});
export type CachedOutcome = z.infer<typeof CachedOutcomeSchema>;

const CacheFileSchema = z.strictObject({ version: z.literal(1), entries: z.record(z.string(), CachedOutcomeSchema) });

/**
 * The key of one evaluation: the submission's content (the mutant's diff), the probe-set version,
 * the task spec's hash and the wall clock it ran under. Anything else that changes (another
 * mutant, a new operator) leaves it alone, so a second run evaluates only what changed.
 */
export function cacheKey(parts: { diff: string; probeSet: string; specHash: string; timeoutS: number | null }): string {
  const h = createHash("sha256");
  for (const p of [parts.diff, parts.probeSet, parts.specHash, String(parts.timeoutS)]) h.update(p).update("\0");
  return h.digest("hex");
}

/** `sha256:` of the task spec file's bytes. */
export function specHash(taskFile: string): string {
  return `sha256:${createHash("sha256").update(readFileSync(taskFile)).digest("hex")}`;
}

/** A JSON file of evaluated mutants per task under the cache folder (`.probegate/mutants/<task>.json`). */
export class MutantCache {
  private readonly entries: Record<string, CachedOutcome>;

  private constructor(
    private readonly file: string,
    entries: Record<string, CachedOutcome>,
  ) {
    this.entries = entries;
  }

  /** Opens (or starts) the cache file of `task` in `dir`; a file that is not a cache is refused, naming it. */
  static open(dir: string, task: string): MutantCache {
    const file = join(dir, `${task}.json`);
    if (!existsSync(file)) return new MutantCache(file, {});
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, "utf8"));
    } catch (e) {
      throw new InputError(`${file}: not JSON (${(e as Error).message}); delete it to start the mutant cache afresh`, { file });
    }
    const r = CacheFileSchema.safeParse(parsed);
    if (!r.success) throw new InputError(`${file}: not a mutant cache (${r.error.issues[0]?.message ?? "bad shape"} at ${r.error.issues[0]?.path.join(".") ?? ""}); delete it to start afresh`, { file });
    return new MutantCache(file, r.data.entries);
  }

  get(key: string): CachedOutcome | undefined {
    return this.entries[key];
  }

  /** Records one outcome and writes the file (atomically: a run cut short keeps what finished). */
  put(key: string, value: CachedOutcome): void {
    this.entries[key] = value;
    mkdirSync(join(this.file, ".."), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify({ version: 1, entries: this.entries }, null, 1)}\n`);
    renameSync(tmp, this.file);
  }
}
