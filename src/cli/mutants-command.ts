import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { MutantsFileSchema, DEFAULT_MUTANTS_FILE, type MutantsFile } from "../core/mutants/mutants-file.js";
import { renderMutantsMarkdown, renderMutantsText, summarise, type MutantsTaskReport } from "../core/mutants/mutants-report.js";
import { scoreMutants } from "../core/mutants/mutants-score.js";
import { InputError } from "../engine/errors.js";
import { MutantCache } from "../engine/mutants/mutant-cache.js";
import { DEFAULT_MUTATION_PYTHON } from "../engine/mutants/generate-mutants.js";
import { runMutants } from "../engine/mutants/run-mutants.js";
import { upstreamRepo } from "../engine/mutants/gate-mutants.js";
import { loadTask, type LoadedTask } from "../engine/task-load.js";
import { parseWith, readYaml } from "../engine/yaml-file.js";
import { poolFromFlags } from "./runner-pool.js";

/** The flags of `validate --mutants`. */
export interface MutantsFlags {
  examples?: string;
  budget?: string;
  jobs?: string;
  format: string;
  cache?: string;
  mutantTimeout?: string;
  mutationPython?: string;
  python?: string;
  gpus?: string;
  cores?: string;
  unsandboxed?: boolean;
  /** A repository gate's upstream repository (overrides mutants.yml's upstream.repo). */
  repo?: string;
}

type Io = { stdout: (s: string) => void; stderr: (s: string) => void };

function wholeNumber(name: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min) throw new InputError(`${name}: expected a whole number ≥ ${min}, got '${value}'.`, { field: name });
  return Number(value);
}

/** The task's mutants.yml (threshold, equivalent marks), or the defaults when it has none. */
export function readMutantsFile(task: LoadedTask): MutantsFile {
  const file = join(task.dir, "mutants.yml");
  if (!existsSync(file)) return DEFAULT_MUTANTS_FILE;
  return parseWith(readYaml(file, "mutants file"), MutantsFileSchema, "mutants file");
}

function referenceOf(task: LoadedTask, examples: string | undefined): string {
  const dir = examples ? join(resolve(examples), task.spec.id) : resolve(task.dir, "..", "..", "examples", "submissions", task.spec.id);
  const file = join(dir, "reference.patch");
  if (!existsSync(file)) throw new InputError(`${task.spec.id}: no reference change at ${file}; --mutants mutates it (pass --examples <dir> holding <task>/reference.patch).`, { file });
  return file;
}

/**
 * `probegate validate --mutants <task>…`: makes the mutants of each task's reference change
 * (cosmic-ray and probegate's operators, on the lines it adds or modifies), evaluates each as a
 * submission on the job pool, and reports per task what killed them, the official survival rate
 * and the probe score. Exit 0 when every task reaches its threshold, 1 when one does not (or its
 * marks are wrong, or a mutant ended in an error); a signal stops it with what finished.
 */
export async function mutantsCommand(dirs: string[], flags: MutantsFlags, io: Io, signal?: AbortSignal): Promise<number> {
  if (!["text", "json", "markdown"].includes(flags.format)) throw new InputError(`--format: expected text, json or markdown, got '${flags.format}'.`, { field: "--format" });
  const budget = wholeNumber("--budget", flags.budget, 1);
  const mutantTimeoutS = wholeNumber("--mutant-timeout", flags.mutantTimeout, 1);
  const tasks = dirs.map((dir) => {
    if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new InputError(`${dir}: no such task folder`);
    const task = loadTask(dir);
    const marks = readMutantsFile(task);
    const file = join(task.dir, "mutants.yml");
    if (task.base.kind === "pr") {
      // A gate has no reference change: it mutates its subsystem's own files at a pinned commit.
      if (!marks.upstream) throw new InputError(`${file}: upstream: ${task.spec.id} is a repository gate (base: {pr: true}), which has no reference change to mutate; give upstream.commit (the pinned commit) and upstream.paths (the gated subsystem's files) in mutants.yml (docs/mutants.md, "Repository gates")`, { file, field: "upstream" });
      return { task, marks, gate: { upstream: marks.upstream, repo: upstreamRepo(task, marks.upstream, flags.repo) } };
    }
    if (marks.upstream) throw new InputError(`${file}: upstream: only a repository gate (base: {pr: true}) mutates an upstream commit; ${task.spec.id} mutates its reference change`, { file, field: "upstream" });
    if (flags.repo !== undefined) throw new InputError(`--repo is for repository gates; ${task.spec.id} mutates its reference change`, { field: "--repo" });
    return { task, marks, reference: referenceOf(task, flags.examples) };
  });
  const { pool, evaluations } = await poolFromFlags({ gpus: flags.gpus, cores: flags.cores, jobs: flags.jobs });
  const jobs = wholeNumber("--jobs", flags.jobs, 1) ?? evaluations;
  const cacheDir = resolve(flags.cache ?? join(".probegate", "mutants"));
  const deadline = budget === undefined ? Infinity : Date.now() + budget * 1000;
  const mutationPython = flags.mutationPython ?? process.env.PROBEGATE_MUTATION_PYTHON ?? DEFAULT_MUTATION_PYTHON;
  const reports: MutantsTaskReport[] = [];
  for (const { task, marks, reference, gate } of tasks) {
    const run = await runMutants({ task, referencePatch: reference, gate, mutationPython, pool, jobs, cache: MutantCache.open(cacheDir, task.spec.id), deadline, mutantTimeoutS, python: flags.python, unsandboxed: flags.unsandboxed, signal, log: (l) => io.stderr(`${l}\n`) });
    const score = scoreMutants(run.records, marks.equivalent, marks.threshold, run.notEvaluated === 0);
    const report: MutantsTaskReport = {
      task: task.spec.id,
      probeSet: run.probeSet,
      ...score,
      survivors: score.survivors.map(summarise),
      equivalents: score.equivalents.map((e) => ({ ...summarise(e.mutant), reason: e.reason })),
      timedOut: score.timedOut.map(summarise),
      errors: score.errors.map(summarise),
      generation: { operators: run.generation.operators, invalid: run.generation.invalid, duplicate: run.generation.duplicate, files: run.generation.files },
      run: { evaluated: run.evaluated, cached: run.cached, notEvaluated: run.notEvaluated, mutantTimeoutS: run.timeoutS, wallS: run.wallS, mutantsPerMinute: run.evaluated ? (60 * run.evaluated) / run.wallS : null, jobs },
    };
    if (run.notEvaluated && !run.records.length) {
      // Nothing scored is not a score that reaches the threshold.
      report.ok = false;
      report.findings.push({ level: "error", message: `--budget of ${budget} s reached before ${task.spec.id}'s reference was evaluated: none of its ${run.notEvaluated} mutants evaluated, so its probe score is unknown; run it again (the cache keeps what finished) or raise --budget` });
    } else if (run.notEvaluated) report.findings.push({ level: "warning", message: `--budget of ${budget} s reached: ${run.notEvaluated} of ${run.generation.mutants.length} mutants not evaluated; the figures cover the ${run.records.length} that were (a next run takes them from the cache and evaluates the rest)` });
    reports.push(report);
    if (flags.format === "text") io.stdout(renderMutantsText(report));
    else if (flags.format === "markdown") io.stdout(renderMutantsMarkdown(report));
  }
  if (flags.format === "json") io.stdout(`${JSON.stringify({ tasks: reports }, null, 2)}\n`);
  const failed = reports.filter((r) => !r.ok).length;
  io.stderr(`${reports.length - failed} of ${reports.length} tasks reach their probe-score threshold on mutants of the reference\n`);
  return failed ? 1 : 0;
}
