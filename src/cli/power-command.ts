import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import Table from "cli-table3";
import { analysePower, mergePowerReports, whyNot, type PowerColumnInput, type PowerReport } from "../core/probe-power/probe-power.js";
import { falseRejectionLines, powerMatrix, renderPowerMarkdown, scopeNote } from "../core/probe-power/probe-power-render.js";
import type { QuarantinedCheck } from "../core/quarantine.js";
import type { EvaluationResult } from "../core/result.js";
import { formatSeconds } from "../core/sizes.js";
import { evaluate } from "../engine/evaluate.js";
import { InputError } from "../engine/errors.js";
import type { JobPool } from "../engine/jobs/job-pool.js";
import { KIT_DIR } from "../engine/package-paths.js";
import { loadTask, type LoadedTask } from "../engine/task-load.js";
import { taskExamples, type DemoCase } from "./demo-command.js";
import { validateTask } from "./validate-command.js";
import { mapConcurrent, poolFromFlags, type BudgetFlags } from "./runner-pool.js";

export interface PowerFlags extends Pick<BudgetFlags, "gpus" | "cores"> {
  runs?: string;
  examples?: string;
  db?: string;
  format: string;
  seed?: string;
  jobs?: string;
  budget?: string;
  unsandboxed?: boolean;
  /** Evaluate only the correct examples (their `--runs`): false rejections only, no power. */
  correctOnly?: boolean;
}

type Io = { stdout: (s: string) => void; stderr: (s: string) => void };

function wholeNumber(name: string, value: string | undefined, min: number, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min) throw new InputError(`${name}: expected a whole number ≥ ${min}, got '${value}'.`, { field: name });
  return n;
}

/** One evaluation to make: an example, and which of its runs this is. */
interface Planned {
  example: DemoCase;
  column: number;
  run: number;
  runs: number;
}

function examplesDir(task: LoadedTask, flag: string | undefined): string {
  const dir = flag ? join(resolve(flag), task.spec.id) : resolve(task.dir, "..", "..", "examples", "submissions", task.spec.id);
  if (!existsSync(join(dir, "expected.yml"))) {
    throw new InputError(`${task.spec.id}: no ${join(dir, "expected.yml")}; --power evaluates the task's examples (pass --examples <dir> holding <task>/expected.yml).`, { file: join(dir, "expected.yml") });
  }
  return dir;
}

/** Evaluates every example of one task (correct ones `runs` times; with --correct-only, only those) and analyses the results. */
async function powerOfTask(task: LoadedTask, flags: PowerFlags, pool: JobPool, io: Io, record: ((run: { task: LoadedTask; example: DemoCase; run: number; runs: number; result: EvaluationResult }) => void) | null, signal?: AbortSignal): Promise<PowerReport> {
  const runs = wholeNumber("--runs", flags.runs, 1, 1);
  const jobs = wholeNumber("--jobs", flags.jobs, 1, 1);
  const seed = flags.seed === undefined ? undefined : wholeNumber("--seed", flags.seed, 0, 0);
  const dir = examplesDir(task, flags.examples);
  const every = taskExamples(task, dir);
  const scope = flags.correctOnly ? "correct-only" : "all";
  const examples = flags.correctOnly ? every.filter((e) => e.expectation.verdict === "resolved") : every;
  if (!examples.length) {
    throw new InputError(`${task.spec.id}: ${join(dir, "expected.yml")} lists no correct example (verdict: resolved), so --correct-only has nothing to evaluate.`, { file: join(dir, "expected.yml") });
  }
  // Round by round: every example once, then the correct ones again, so a run cut short by
  // --budget still covers every example and spreads the repeats evenly.
  const plan: Planned[] = examples
    .flatMap((example, column) => {
      const n = example.expectation.verdict === "resolved" ? runs : 1;
      return Array.from({ length: n }, (_, run) => ({ example, column, run, runs: n }));
    })
    .sort((a, b) => a.run - b.run || a.column - b.column);
  const budget = flags.budget === undefined ? undefined : wholeNumber("--budget", flags.budget, 1, 1);
  const deadline = budget === undefined ? Infinity : Date.now() + budget * 1000;
  let notStarted = 0;
  const results: EvaluationResult[][] = examples.map(() => []);
  const what = flags.correctOnly ? `${examples.length} correct examples of ${every.length} (--correct-only: the flawed ones are not evaluated)` : `${examples.length} examples`;
  io.stderr(`probegate validate --power ${task.spec.id}: ${what}, ${plan.length} evaluations (${runs} per correct submission), ${jobs} at a time\n`);
  let finished = 0;
  let started = 0;
  const all = mapConcurrent(plan, jobs, async (p, i) => {
    if (Date.now() > deadline || signal?.aborted) {
      notStarted++;
      return;
    }
    started++;
    const name = basename(p.example.patch);
    const label = `${task.spec.id} / ${name}${p.runs > 1 ? ` run ${p.run + 1}/${p.runs}` : ""}`;
    io.stderr(`  [${i + 1}/${plan.length}] ${label} …\n`);
    const result = await evaluate({
      task,
      submission: { kind: "patch", path: p.example.patch },
      kitDir: KIT_DIR,
      unsandboxed: flags.unsandboxed,
      // One pool for every evaluation of this command: jobs side by side never share a GPU, core or port.
      pool,
      seed: seed === undefined ? undefined : (seed + i) % 2 ** 32,
    });
    results[p.column]?.push(result);
    finished++;
    const failed = result.probes.filter((c) => c.status === "failed" || c.status === "error").map((c) => `${c.id} ${c.status}`);
    const unexpected = result.verdict !== p.example.expectation.verdict ? `  ✗ expected ${p.example.expectation.verdict}: ${whyNot(result)}` : "";
    io.stderr(`  [${finished}/${plan.length} done] ${label} → ${result.verdict}${failed.length ? ` (${failed.join(", ")})` : ""} in ${formatSeconds(result.durations.totalS)}${unexpected}\n`);
    if (p.example.expectation.verdict === "resolved") record?.({ task, example: p.example, run: p.run, runs: p.runs, result });
  });
  // A signal ends the run now: the evaluations in flight are abandoned (they end with the process),
  // and the report covers those that finished.
  const stopped = await Promise.race([all.then(() => false), interruption(signal)]);
  const requirements = task.spec.requirements.map((r) => r.id);
  if (stopped) {
    const inputs = examples.map((example, c) => ({ submission: basename(example.patch), expectation: example.expectation, results: [...(results[c] ?? [])] }));
    const abandoned = started - finished;
    io.stderr(`  interrupted by ${String(signal?.reason)}: ${finished} evaluations finished, ${abandoned} in flight abandoned, ${plan.length - started} not started\n`);
    return analysePower(task.spec.id, inputs, requirements, scope, { signal: String(signal?.reason), abandoned, notStarted: plan.length - started });
  }
  if (notStarted) io.stderr(`  --budget of ${budget} s reached: ${notStarted} of ${plan.length} evaluations not started; the report covers the ${plan.length - notStarted} that ran\n`);
  const inputs: PowerColumnInput[] = examples.map((example, c) => ({ submission: basename(example.patch), expectation: example.expectation, results: results[c] ?? [] }));
  return analysePower(task.spec.id, inputs, requirements, scope);
}

/** Resolves true once `signal` is aborted; never without one. */
function interruption(signal: AbortSignal | undefined): Promise<true> {
  return new Promise((resolve) => {
    if (!signal) return;
    if (signal.aborted) return resolve(true);
    signal.addEventListener("abort", () => resolve(true), { once: true });
  });
}

function renderText(report: PowerReport, quarantined: QuarantinedCheck[] | null): string {
  const { head, body } = powerMatrix(report);
  const table = new Table({ head, style: { head: [], border: [] }, chars: { mid: "", "left-mid": "", "mid-mid": "", "right-mid": "" } });
  for (const row of body) table.push(row);
  const note = scopeNote(report);
  const lines = [`\n${report.ok ? "✓" : "✗"} ${report.task}: ${note ? "false rejections (correct-only)" : "probe power"}`, ...(note ? [`! ${note}`] : []), table.toString()];
  if (report.falseRejections.length) lines.push("false rejections of correct submissions:", ...falseRejectionLines(report).map((l) => `  ${l}`));
  for (const f of report.findings) lines.push(`  ${f.level === "error" ? "✗" : "!"} ${f.message}`);
  if (quarantined) lines.push(quarantined.length ? `quarantined now (store): ${quarantined.map((q) => `${q.check} (failed ${q.failures} of last ${q.window} known-good)`).join(", ")}` : "quarantined now (store): none");
  return `${lines.join("\n")}\n`;
}

/**
 * `probegate validate --power <task>…`: the static checks of `validate`, then every example of each
 * task evaluated (each correct one `--runs` times) and the probes × submissions matrix printed with
 * what validation found. With `--db`, every run of a correct example is recorded as known-good
 * outcomes for quarantine. With `--correct-only`, only the correct examples are evaluated (false
 * rejections, to add runs to a full one). Exit 0 when every task passes, 1 when validation fails.
 * Aborting `signal` (the CLI's SIGTERM or SIGINT) ends it at once with the report of the
 * evaluations that finished: a time limit loses only what was in flight.
 */
export async function powerCommand(dirs: string[], flags: PowerFlags, io: Io, signal?: AbortSignal): Promise<number> {
  if (!["text", "json", "markdown"].includes(flags.format)) throw new InputError(`--format: expected text, json or markdown, got '${flags.format}'.`, { field: "--format" });
  const tasks = dirs.map((dir) => {
    if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new InputError(`${dir}: no such task folder`);
    return loadTask(dir);
  });
  // Loaded on use: the store's native module is needed only with --db.
  const store = flags.db ? await import("./power-store.js") : null;
  const db = store && flags.db ? store.openPowerStore(flags.db) : null;
  const { pool } = await poolFromFlags({ gpus: flags.gpus, cores: flags.cores });
  let failed = 0;
  const reports: Array<{ report: PowerReport; problems: string[]; quarantined: QuarantinedCheck[] | null }> = [];
  try {
    for (const task of tasks) {
      if (signal?.aborted) {
        io.stderr(`✗ ${task.spec.id}: not started (interrupted by ${String(signal.reason)})\n`);
        failed++;
        continue;
      }
      const problems = validateTask(task);
      for (const p of problems) io.stderr(`✗ ${task.spec.id}: ${p}\n`);
      const report = await powerOfTask(task, flags, pool, io, db && store ? (r) => store.recordRun(db, r) : null, signal);
      const quarantined = db && store && report.probeSet ? store.quarantinedNow(db, task.spec.id, report.probeSet) : null;
      if (problems.length || !report.ok) failed++;
      reports.push({ report, problems, quarantined });
      if (flags.format === "text") io.stdout(renderText(report, quarantined));
      else if (flags.format === "markdown") io.stdout(`${renderPowerMarkdown(report)}\n`);
    }
  } finally {
    db?.close();
  }
  if (flags.format === "json") io.stdout(`${JSON.stringify(reports.map((r) => ({ ...r.report, ok: r.report.ok && r.problems.length === 0, staticProblems: r.problems, quarantined: r.quarantined, matrix: powerMatrix(r.report) })), null, 2)}\n`);
  io.stderr(`${reports.length - failed} of ${reports.length} tasks pass probe-power validation${flags.correctOnly ? " (--correct-only: false rejections and requirements only; power not measured)" : ""}\n`);
  return failed ? 1 : 0;
}

/** The power reports in one `validate --power --format json` output (a list), or one report alone. */
function readPowerReports(file: string): PowerReport[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new InputError(`${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? String(e)})`, { file });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new InputError(`${file}: not JSON (${(e as Error).message}); pass the output of validate --power --format json`, { file });
  }
  const list = Array.isArray(data) ? data : [data];
  list.forEach((r, i) => {
    const rep = r as Partial<PowerReport> | null;
    if (!rep || typeof rep.task !== "string" || !Array.isArray(rep.columns) || !Array.isArray(rep.rows)) {
      throw new InputError(`${file}: entry ${i} is not a power report (no task, columns and rows); pass the output of validate --power --format json`, { file, field: `[${i}]` });
    }
  });
  return list as PowerReport[];
}

/**
 * `probegate merge-power <reports…>`: the power reports of several `validate --power --format json`
 * runs (calls cut short by a time limit, runners side by side), one report per task, judged again
 * on the summed matrix, printed as text, markdown or JSON like validate's own. Exit 0 when every
 * merged task passes, 1 when one fails; reports of different probe sets of one task are refused.
 */
export function mergePowerCommand(files: string[], flags: { format: string }, io: Io): number {
  if (!["text", "json", "markdown"].includes(flags.format)) throw new InputError(`--format: expected text, json or markdown, got '${flags.format}'.`, { field: "--format" });
  const byTask = new Map<string, Array<{ file: string; report: PowerReport & { staticProblems?: string[] } }>>();
  for (const file of files) for (const report of readPowerReports(file)) byTask.set(report.task, [...(byTask.get(report.task) ?? []), { file, report }]);
  const merged = [...byTask.values()].map((group) => {
    let report: PowerReport;
    try {
      report = mergePowerReports(group.map((g) => g.report));
    } catch (e) {
      throw new InputError(`${(e as Error).message} (${[...new Set(group.map((g) => g.file))].join(", ")})`);
    }
    const problems = [...new Set(group.flatMap((g) => g.report.staticProblems ?? []))];
    return { report, problems, from: group.length };
  });
  for (const { report, problems, from } of merged) {
    io.stderr(`${report.task}: ${from} reports merged, ${report.columns.reduce((n, c) => n + c.runs, 0)} evaluations\n`);
    for (const p of problems) io.stderr(`✗ ${report.task}: ${p}\n`);
    if (flags.format === "text") io.stdout(renderText(report, null));
    else if (flags.format === "markdown") io.stdout(`${renderPowerMarkdown(report)}\n`);
  }
  if (flags.format === "json") io.stdout(`${JSON.stringify(merged.map((m) => ({ ...m.report, ok: m.report.ok && m.problems.length === 0, staticProblems: m.problems, matrix: powerMatrix(m.report) })), null, 2)}\n`);
  return merged.every((m) => m.report.ok && m.problems.length === 0) ? 0 : 1;
}
