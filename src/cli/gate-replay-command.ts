import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { readResult, type EvaluationResult } from "../core/result.js";
import { evaluate, type EvaluateOptions } from "../engine/evaluate.js";
import { InputError } from "../engine/errors.js";
import { progressPrinter } from "../engine/progress-lines.js";
import { loadTask, type LoadedTask } from "../engine/task-load.js";
import { evaluationOptions, parseIntFlag } from "./eval-command.js";
import { commitsFromHistory, commitsFromShas, describeWatched, openRepo, parseSince, watchedBy, watchedPaths, type ReplayCommit, type ReplayRepo } from "./gate-replay-history.js";
import { injectOnto, parseInjections, scratchRepo, type Injection } from "./gate-replay-inject.js";
import { doneLine, renderReplayMarkdown, renderReplayTable, type ReplayRow } from "./gate-replay-table.js";
import type { Io } from "./main.js";
import { poolFromFlags, type BudgetFlags } from "./runner-pool.js";

export interface GateReplayFlags extends BudgetFlags {
  repo: string;
  task: string;
  shas?: string[];
  since?: string;
  count?: string;
  ref: string;
  paths?: string[];
  allPaths?: boolean;
  outDir?: string;
  table?: string;
  force?: boolean;
  tableOnly?: boolean;
  inject?: string[];
  seed: string;
  probes?: string;
  python?: string;
  worldSize?: string;
  /** Commander's `--no-always-probe`: true unless it is given. */
  alwaysProbe: boolean;
  unsandboxed?: boolean;
  maxProcesses?: string;
  maxDisk?: string;
  keepWorkspace?: boolean;
  verbose?: boolean;
}

/** What the command does its work with; tests swap the evaluation. */
export interface GateReplayDeps {
  evaluate?: (opts: EvaluateOptions) => Promise<EvaluationResult>;
  signal?: AbortSignal;
}

/** A planned evaluation: the row it fills, and the head to judge (the PR, or a regression injected on it). */
interface Planned {
  row: ReplayRow;
  injection?: Injection;
  /** Its evaluation began (a stop leaves it in flight). */
  started?: boolean;
}

/** The commits to replay, from --shas or from history (--since / --count, filtered by the watched paths). */
async function selectCommits(flags: GateReplayFlags, repo: ReplayRepo, task: LoadedTask, io: Io): Promise<ReplayCommit[]> {
  const fromHistory = flags.since !== undefined || flags.count !== undefined;
  if (flags.shas?.length && fromHistory) throw new InputError("--shas names the commits; --since and --count choose them from history: give one or the other.", { field: "--shas" });
  if (!flags.shas?.length && !fromHistory) throw new InputError("gate replay: say which PRs: --shas <sha...>, or --since <date> and/or --count <n> (first-parent history of --ref).", { field: "--shas" });
  if (flags.shas?.length) {
    const off = [flags.allPaths && "--all-paths", flags.ref !== "HEAD" && "--ref"].filter(Boolean);
    if (off.length) throw new InputError(`${off.join(", ")} choose commits from history, with --since or --count; --shas names them.`, { field: String(off[0]) });
    return commitsFromShas(repo, flags.shas);
  }
  if (flags.paths && flags.allPaths) throw new InputError("--paths and --all-paths: give one or the other.", { field: "--paths" });
  const paths = flags.allPaths ? null : flags.paths ? [flags.paths] : watchedPaths(task.spec);
  if (paths && paths.length === 0) throw new InputError(`${task.file} declares no paths (official.select, official.files) to pick commits by: give --paths <globs...>, or --all-paths.`, { field: "--paths" });
  if (paths) io.stderr(`probegate gate replay: commits changing ${describeWatched(paths)}${flags.paths ? " (--paths)" : ` (from ${task.spec.id}'s task.yml; --paths to change)`}\n`);
  return commitsFromHistory(repo, { ref: flags.ref, since: flags.since === undefined ? undefined : parseSince(flags.since), count: parseIntFlag("--count", flags.count, 1), paths });
}

/**
 * A result already in --out-dir for this row: kept (resumed) when it is this task's judgement of
 * this commit against this base. One of another task or commit is refused, not overwritten; an
 * unreadable one (a run cut short while writing) is run again.
 */
function keptResult(row: ReplayRow, task: LoadedTask, io: Io): EvaluationResult | null {
  if (!existsSync(row.file)) return null;
  let read;
  try {
    read = readResult(JSON.parse(readFileSync(row.file, "utf8")));
  } catch (e) {
    read = { ok: false as const, problem: (e as Error).message };
  }
  if (!read.ok) {
    io.stderr(`probegate gate replay: ${row.file} is not a result (${read.problem}): evaluating again\n`);
    return null;
  }
  const r = read.result;
  const other = r.task.id !== task.spec.id ? `task ${r.task.id}` : r.submission.prBase?.asked !== row.commit.parent ? `base ${r.submission.prBase?.asked ?? "(none)"}` : !row.injected && r.submission.sha !== row.commit.sha ? `commit ${r.submission.sha}` : null;
  if (other) throw new InputError(`--out-dir: ${row.file} is a result of ${other}, not of ${task.spec.id} on ${row.commit.sha.slice(0, 9)}: give another --out-dir, or --force to overwrite it.`, { field: "--out-dir" });
  return r;
}

/** Writes the result whole or not at all: a run stopped mid-write leaves no file that would look resumable. */
function writeResult(file: string, result: EvaluationResult): void {
  writeFileSync(`${file}.tmp`, `${JSON.stringify(result, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
}

/**
 * `probegate gate replay`: replays merged PRs of `--repo` through the gate `--task`, from any folder
 * (the gate's task.yml is all it needs), each with the engine `probegate eval` runs, in this process.
 */
export async function gateReplayCommand(flags: GateReplayFlags, io: Io, deps: GateReplayDeps = {}): Promise<number> {
  const task = loadTask(flags.task, flags.probes);
  if (task.base.kind !== "pr") throw new InputError(`--task ${flags.task}: ${task.spec.id} is not a repository gate (its task.yml has no base: {pr: true}); gate replay judges PRs against their own base.`, { field: "--task" });
  const options = evaluationOptions(flags);
  const jobs = parseIntFlag("--jobs", flags.jobs, 1) ?? 1;
  const injections = parseInjections(flags.inject ?? []);
  const repo = await openRepo(flags.repo);
  const commits = await selectCommits(flags, repo, task, io);
  const outDir = resolve(flags.outDir ?? `replay-${task.spec.id}`);
  mkdirSync(outDir, { recursive: true });
  const watched = watchedBy(flags.paths ? [flags.paths] : watchedPaths(task.spec));
  const planned: Planned[] = commits.flatMap((commit) => {
    const base = { commit, watched: commit.changed.filter(watched), result: null };
    if (!injections.length) return [{ row: { ...base, file: join(outDir, `${commit.sha.slice(0, 9)}.json`) } }];
    return injections.map((injection) => ({ injection, row: { ...base, injected: `inject ${injection.name}`, file: join(outDir, `inject-${injection.name}-${commit.sha.slice(0, 9)}.json`) } }));
  });
  for (const p of planned) {
    if (flags.force && !flags.tableOnly) continue;
    p.row.result = keptResult(p.row, task, io);
    p.row.kept = p.row.result !== null;
    if (!p.row.result && flags.tableOnly) p.row.problem = "not run (--table-only)";
  }
  const todo = flags.tableOnly ? [] : planned.filter((p) => !p.row.result);
  const kept = planned.length - todo.length;
  const what = `${planned.length} ${injections.length ? "injection" : "PR"}${planned.length === 1 ? "" : "s"}`;
  io.stderr(`probegate gate replay: ${what} of ${repo.source} through ${task.spec.id}: ${kept} already in ${outDir}${kept && !flags.tableOnly ? " (--force to run them again)" : ""}, ${todo.length} to evaluate${todo.length ? `, ${Math.min(jobs, todo.length)} at a time` : ""}\n`);
  if (todo.length) {
    const scratchDir = injections.length ? mkdtempSync(join(tmpdir(), "pg-replay-inject-")) : null;
    try {
      const scratch = scratchDir ? await scratchRepo(repo, scratchDir) : null;
      const { pool } = await poolFromFlags({ gpus: flags.gpus, cores: flags.cores });
      const run = deps.evaluate ?? evaluate;
      const evaluateOne = async (p: Planned, n: number) => {
        const { row } = p;
        p.started = true;
        const prefix = `[${n}/${todo.length} ${row.injected ? `${row.injected} on ` : ""}${row.commit.pr !== null ? `#${row.commit.pr} ` : ""}${row.commit.sha.slice(0, 9)}] `;
        writeFileSync(`${row.file}.log`, `probegate gate replay: ${row.commit.title}\nhead ${row.commit.sha}${row.injected ? ` + ${row.injected}` : ""}, base ${row.commit.parent}\n`);
        const toLog = progressPrinter((s) => appendFileSync(`${row.file}.log`, s), { verbose: true });
        const toTerminal = progressPrinter(io.stderr, { verbose: flags.verbose, prefix });
        io.stderr(`${prefix}${row.commit.title} (${row.watched.length}/${row.commit.changed.length} changed paths watched)\n`);
        try {
          const head = p.injection && scratch ? await injectOnto(scratch, row.commit.sha, p.injection) : row.commit.sha;
          const result = await run({
            task,
            submission: { kind: "git", repo: scratch?.source ?? repo.source, ref: head },
            prBase: row.commit.parent,
            ...options,
            pool,
            onEvent: (e) => (toLog(e), toTerminal(e)),
          });
          writeResult(row.file, result);
          row.result = result;
        } catch (e) {
          // One PR the engine refuses (a base of another history, a patch that does not apply) is its row's problem, not the replay's.
          row.problem = e instanceof InputError ? e.message : String((e as Error).stack ?? e);
          appendFileSync(`${row.file}.log`, `not judged: ${row.problem}\n`);
        }
        io.stderr(`${prefix}${doneLine(row)}\n`);
      };
      await runAll(todo, jobs, evaluateOne, deps.signal);
    } finally {
      if (scratchDir) rmSync(scratchDir, { recursive: true, force: true });
    }
  }
  const rows = planned.map((p) => p.row);
  const unfinished = planned.filter((p) => !p.row.result && !p.row.problem);
  for (const p of unfinished) p.row.problem = p.started ? "abandoned in flight (stopped): run the replay again to judge it" : "not started (stopped)";
  if (unfinished.length) {
    const inFlight = unfinished.filter((p) => p.started).length;
    io.stderr(`probegate gate replay: stopped by ${String(deps.signal?.reason ?? "a signal")}: ${todo.length - unfinished.length} evaluated, ${inFlight} in flight abandoned, ${unfinished.length - inFlight} not started; the same command goes on from here\n`);
  }
  if (flags.table) writeFileSync(flags.table, renderReplayMarkdown(rows));
  io.stdout(`${renderReplayTable(rows)}\n`);
  if (flags.table) io.stderr(`probegate gate replay: markdown table in ${flags.table}\n`);
  return rows.every((r) => r.result && r.result.verdict !== "error") ? 0 : 3;
}

/**
 * Runs `fn` over `items`, `limit` at once, numbering them from 1. Once `signal` aborts, no further
 * item starts and it returns at once, leaving those in progress (the process ends with them).
 */
async function runAll<T>(items: readonly T[], limit: number, fn: (item: T, n: number) => Promise<void>, signal?: AbortSignal): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length && !signal?.aborted) {
      const i = next++;
      await fn(items[i] as T, i + 1);
    }
  };
  const all = Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (!signal) return void (await all);
  const stopped = new Promise<void>((ok) => (signal.aborted ? ok() : signal.addEventListener("abort", () => ok(), { once: true })));
  await Promise.race([all, stopped]);
}
