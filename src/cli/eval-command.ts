import { writeFileSync } from "node:fs";
import { renderSummary } from "../core/check-run-render.js";
import { parseByteSize } from "../core/sizes.js";
import type { EvaluationResult } from "../core/result.js";
import { evaluate } from "../engine/evaluate.js";
import { InputError } from "../engine/errors.js";
import { parseSubmission } from "../engine/submission.js";
import { loadTask } from "../engine/task-load.js";
import { KIT_DIR } from "../engine/package-paths.js";
import { progressPrinter } from "../engine/progress-lines.js";
import { renderResultTable } from "./result-table.js";

export interface EvalFlags {
  task: string;
  submission: string;
  probes?: string;
  out?: string;
  format: string;
  python?: string;
  worldSize?: string;
  gpus?: string;
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

/** Exit codes of `probegate eval`: scripts gate on them. */
export function exitCodeFor(result: Pick<EvaluationResult, "verdict">): number {
  if (result.verdict === "resolved") return 0;
  if (result.verdict === "error") return 3;
  return 1;
}

function parseIntFlag(name: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new InputError(`${name}: expected a whole number ≥ ${min}, got '${value}'.`, { field: name });
  return n;
}

function parseSizeFlag(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = parseByteSize(value);
  if (n === undefined || n < 1024 * 1024) throw new InputError(`${name}: expected a size of at least 1MiB like 512MiB or 4GiB, got '${value}'.`, { field: name });
  return n;
}

/** `--seed`: the probe-parameter seed a result records (`params.seed`), to reproduce that evaluation. */
function parseSeed(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 0xffffffff) throw new InputError(`--seed: expected a whole number from 0 to 4294967295 (a result's params.seed), got '${value}'.`, { field: "--seed" });
  return n;
}

function parseGpus(value: string | undefined): number[] | undefined {
  if (value === undefined || value === "all") return undefined;
  if (value === "none") return [];
  const list = value.split(",").map((s) => Number(s.trim()));
  if (list.some((n) => !Number.isInteger(n) || n < 0)) throw new InputError(`--gpus: expected 'all', 'none' or indices like 0,1 — got '${value}'.`, { field: "--gpus" });
  return list;
}

/** `probegate eval`: one evaluation with progress on stderr and the result on stdout / --out. */
export async function evalCommand(flags: EvalFlags, io: { stdout: (s: string) => void; stderr: (s: string) => void }): Promise<number> {
  if (!["text", "json", "markdown"].includes(flags.format)) {
    throw new InputError(`--format: expected text, json or markdown, got '${flags.format}'.`, { field: "--format" });
  }
  if (flags.knownGood && !flags.db) throw new InputError("--known-good records the run in a store: pass --db <file> too.", { field: "--known-good" });
  const task = loadTask(flags.task, flags.probes);
  const submission = parseSubmission(flags.submission);
  const result = await evaluate({
    task,
    submission,
    kitDir: KIT_DIR,
    python: flags.python,
    worldSize: parseIntFlag("--world-size", flags.worldSize, 1),
    gpus: parseGpus(flags.gpus),
    alwaysProbe: flags.alwaysProbe,
    keepWorkspace: flags.keepWorkspace,
    seed: parseSeed(flags.seed),
    unsandboxed: flags.unsandboxed,
    runLimits: { processes: parseIntFlag("--max-processes", flags.maxProcesses, 8), diskBytes: parseSizeFlag("--max-disk", flags.maxDisk) },
    signingKey: process.env.PROBEGATE_SIGNING_KEY || undefined,
    onEvent: progressPrinter(io.stderr, { verbose: flags.verbose }),
  });
  if (flags.out) writeFileSync(flags.out, `${JSON.stringify(result, null, 2)}\n`);
  // Loaded on use: the store's native module is needed only with --db.
  const read = flags.db ? (await import("./eval-quarantine.js")).readThroughStore(flags.db, result, { knownGood: !!flags.knownGood, submission: flags.submission }, io.stderr) : null;
  if (flags.format === "json") io.stdout(`${JSON.stringify(result, null, 2)}\n`);
  else if (flags.format === "markdown") io.stdout(`${read?.markdown ?? renderSummary(result)}\n`);
  else io.stdout(`${renderResultTable(result)}\n`);
  return exitCodeFor(read ?? result);
}
