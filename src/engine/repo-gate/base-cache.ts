import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import { OfficialSchema } from "../../core/result.js";
import { environmentRoot } from "../environment/environment-store.js";

/** Bumped when what a cached base run holds, or how it is judged, changes. */
const FORMAT = 1;

/**
 * Where the base's outcomes are kept: `$PROBEGATE_BASE_CACHE_DIR`, else `base-outcomes` beside the
 * runner's environment store (/var/cache/probegate/base-outcomes).
 */
export function baseCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  return env.PROBEGATE_BASE_CACHE_DIR || join(dirname(environmentRoot(env)), "base-outcomes");
}

/** What one run of the base's tests on the base's tree left, as kept between evaluations. */
export const BaseOutcomesSchema = z.strictObject({
  format: z.literal(FORMAT),
  key: z.string(),
  mergeBase: z.string(),
  ranAt: z.string(),
  official: OfficialSchema,
  cases: z.array(
    z.strictObject({
      classname: z.string(),
      name: z.string(),
      outcome: z.enum(["passed", "failed", "error", "skipped"]),
      message: z.string().optional(),
    }),
  ),
});
export type BaseOutcomes = z.infer<typeof BaseOutcomesSchema>;

/**
 * The key of the base's outcomes: they depend only on the base tree (the merge base SHA), the
 * environment (its lock's hash, else the interpreter and torch), the task file (its command,
 * setup and selection rules), the tests selected and how the job runs (backend and ranks). Many
 * PRs share one base: each of them finds the base's run here instead of repeating it.
 */
export function baseCacheKey(o: { mergeBase: string; environment: string; taskFile: string; tests: readonly string[]; backend: string; ranks: number }): string {
  let taskBytes = "";
  try {
    taskBytes = readFileSync(o.taskFile, "utf8");
  } catch {
    taskBytes = o.taskFile;
  }
  const h = createHash("sha256");
  h.update(JSON.stringify({ format: FORMAT, mergeBase: o.mergeBase, environment: o.environment, task: createHash("sha256").update(taskBytes).digest("hex"), tests: o.tests, backend: o.backend, ranks: o.ranks }));
  return h.digest("hex");
}

/** The cached outcomes under `key`, or null (none, unreadable, or of another format). */
export function readBaseOutcomes(key: string, root = baseCacheRoot()): BaseOutcomes | null {
  try {
    const parsed = BaseOutcomesSchema.safeParse(JSON.parse(readFileSync(join(root, `${key}.json`), "utf8")));
    return parsed.success && parsed.data.key === key ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * Keeps the outcomes (written whole, then renamed, so a reader never sees half a file). Returns why
 * not where the folder cannot be written: the evaluation goes on, it only misses the cache next time.
 */
export function writeBaseOutcomes(value: BaseOutcomes, root = baseCacheRoot()): string | null {
  try {
    mkdirSync(root, { recursive: true });
    const tmp = join(root, `.${value.key}.${process.pid}.tmp`);
    writeFileSync(tmp, JSON.stringify(value));
    renameSync(tmp, join(root, `${value.key}.json`));
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}
