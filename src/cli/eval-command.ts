import { writeFileSync } from "node:fs";
import { basename } from "node:path";
import { renderSummary } from "../core/check-run-render.js";
import { parseByteSize } from "../core/sizes.js";
import type { EvaluationResult } from "../core/result.js";
import { evaluate, type EvaluateOptions } from "../engine/evaluate.js";
import { InputError } from "../engine/errors.js";
import { parseSubmission } from "../engine/submission.js";
import { loadTask } from "../engine/task-load.js";
import { KIT_DIR } from "../engine/package-paths.js";
import { progressPrinter } from "../engine/progress-lines.js";
import { renderBatchTable, renderResultTable } from "./result-table.js";
import { mapConcurrent, poolFromFlags, type BudgetFlags } from "./runner-pool.js";

export interface EvalFlags extends BudgetFlags {
  task: string;
  /** One or more; several are evaluated side by side on the runner's pool. */
  submission: string | string[];
  /** A repository gate's PR base commit. */
  prBase?: string;
  probes?: string;
  out?: string;
  format: string;
  python?: string;
  worldSize?: string;
  alwaysProbe?: boolean;
  keepWorkspace?: boolean;
  unsandboxed?: boolean;
  maxProcesses?: string;
  maxDisk?: string;
  verbose?: boolean;
  seed?: string;
  db?: string;
  knownGood?: boolean;
}

/** The flags `probegate eval` and `probegate gate replay` both turn into evaluate() options. */
export type RunFlags = Pick<EvalFlags, "python" | "worldSize" | "alwaysProbe" | "keepWorkspace" | "unsandboxed" | "maxProcesses" | "maxDisk" | "seed">;

/** evaluate()'s options from those flags, checked before anything runs (a bad value names its flag). */
export function evaluationOptions(flags: RunFlags): Pick<EvaluateOptions, "kitDir" | "python" | "worldSize" | "alwaysProbe" | "keepWorkspace" | "seed" | "unsandboxed" | "runLimits" | "signingKey"> {
  return {
    kitDir: KIT_DIR,
    python: flags.python,
    worldSize: parseIntFlag("--world-size", flags.worldSize, 1),
    alwaysProbe: flags.alwaysProbe,
    keepWorkspace: flags.keepWorkspace,
    seed: parseSeed(flags.seed),
    unsandboxed: flags.unsandboxed,
    runLimits: { processes: parseIntFlag("--max-processes", flags.maxProcesses, 8), diskBytes: parseSizeFlag("--max-disk", flags.maxDisk) },
    signingKey: process.env.PROBEGATE_SIGNING_KEY || undefined,
  };
}

/** Exit codes of `probegate eval`: scripts gate on them. */
export function exitCodeFor(result: Pick<EvaluationResult, "verdict">): number {
  if (result.verdict === "resolved") return 0;
  if (result.verdict === "error") return 3;
  return 1;
}

/** A whole-number flag of at least `min`, or undefined when not given. */
export function parseIntFlag(name: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new InputError(`${name}: expected a whole number ≥ ${min}, got '${value}'.`, { field: name });
  return n;
}

/** A size flag (512MiB, 4GiB) of at least 1MiB, or undefined when not given. */
export function parseSizeFlag(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = parseByteSize(value);
  if (n === undefined || n < 1024 * 1024) throw new InputError(`${name}: expected a size of at least 1MiB like 512MiB or 4GiB, got '${value}'.`, { field: name });
  return n;
}

/** `--seed`: the probe-parameter seed a result records (`params.seed`), to reproduce that evaluation. */
export function parseSeed(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 0xffffffff) throw new InputError(`--seed: expected a whole number from 0 to 4294967295 (a result's params.seed), got '${value}'.`, { field: "--seed" });
  return n;
}

/** The worst exit code of several results: error over rejected over resolved. */
export function worstExitCode(results: readonly Pick<EvaluationResult, "verdict">[]): number {
  return Math.max(0, ...results.map(exitCodeFor));
}

/** "reference" for examples/…/reference.patch, "octo/repo@main" for a git source: a progress prefix. */
function shortName(submission: string): string {
  return basename(submission.replace(/\/+$/, "")).replace(/\.(patch|diff)$/, "");
}

/**
 * `probegate eval`: one evaluation, or several side by side on the runner's pool (`--jobs`,
 * `--gpus`, `--cores`), with progress on stderr (each line prefixed by its submission when there
 * are several) and the result on stdout / --out (a JSON array for several).
 */
export async function evalCommand(flags: EvalFlags, io: { stdout: (s: string) => void; stderr: (s: string) => void }): Promise<number> {
  if (!["text", "json", "markdown"].includes(flags.format)) {
    throw new InputError(`--format: expected text, json or markdown, got '${flags.format}'.`, { field: "--format" });
  }
  if (flags.knownGood && !flags.db) throw new InputError("--known-good records the run in a store: pass --db <file> too.", { field: "--known-good" });
  const task = loadTask(flags.task, flags.probes);
  const sources = Array.isArray(flags.submission) ? flags.submission : [flags.submission];
  if (sources.length === 0) throw new InputError("--submission: give at least one submission (a folder, a .patch onto the base, or repo@ref).", { field: "--submission" });
  const submissions = sources.map((s) => parseSubmission(s));
  const options = evaluationOptions(flags);
  const { pool, evaluations } = await poolFromFlags(flags);
  const many = submissions.length > 1;
  if (many) io.stderr(`probegate eval: ${submissions.length} submissions of ${task.spec.id}, ${evaluations} at a time on ${pool.gpus.length} GPUs and ${pool.cores.length} cores\n`);
  const results = await mapConcurrent(submissions, evaluations, (submission, i) =>
    evaluate({
      task,
      submission,
      prBase: flags.prBase,
      ...options,
      pool,
      onEvent: progressPrinter(io.stderr, { verbose: flags.verbose, prefix: many ? `[${shortName(sources[i] as string)}] ` : "" }),
    }),
  );
  const out = many ? results : results[0];
  if (flags.out) writeFileSync(flags.out, `${JSON.stringify(out, null, 2)}\n`);
  // Loaded on use: the store's native module is needed only with --db.
  const quarantine = flags.db ? (await import("./eval-quarantine.js")).readThroughStore : null;
  const reads = results.map((result, i) => (quarantine && flags.db ? quarantine(flags.db, result, { knownGood: !!flags.knownGood, submission: sources[i] as string }, io.stderr) : null));
  const markdown = results.map((r, i) => reads[i]?.markdown ?? renderSummary(r));
  if (flags.format === "json") io.stdout(`${JSON.stringify(out, null, 2)}\n`);
  else if (flags.format === "markdown") io.stdout(`${markdown.join("\n\n---\n\n")}\n`);
  else io.stdout(`${many ? renderBatchTable(sources.map(shortName), results) : renderResultTable(results[0] as EvaluationResult)}\n`);
  return worstExitCode(results.map((r, i) => reads[i] ?? r));
}
