import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import Table from "cli-table3";
import { renderSummary } from "../core/check-run-render.js";
import { compareToExpectation, ExpectationsSchema, failedCategories, type Expectation } from "../core/demo-expectation.js";
import { formatSeconds } from "../core/sizes.js";
import { evaluate } from "../engine/evaluate.js";
import { InputError } from "../engine/errors.js";
import { loadTask, type LoadedTask } from "../engine/task-load.js";
import { parseWith, readYaml } from "../engine/yaml-file.js";
import { KIT_DIR, PACKAGE_ROOT } from "../engine/package-paths.js";
import { progressPrinter } from "../engine/progress-lines.js";
import { mapConcurrent, poolFromFlags, type BudgetFlags } from "./runner-pool.js";

export interface DemoFlags extends BudgetFlags {
  root?: string;
  outDir: string;
  task?: string[];
  /** Every example, not only the quick set. */
  all?: boolean;
  /** Only these examples (file names, with or without .patch), quick or not. */
  example?: string[];
  /** Print the examples the demo would evaluate (task/name, one a line) and evaluate none. */
  list?: boolean;
  verbose?: boolean;
  unsandboxed?: boolean;
}

export interface DemoCase {
  task: LoadedTask;
  expectation: Expectation;
  patch: string;
}

/** The example submissions of one task with their expectations, from `<dir>/expected.yml`. */
export function taskExamples(task: LoadedTask, dir: string): DemoCase[] {
  const file = join(dir, "expected.yml");
  return parseWith(readYaml(file, "example expectations"), ExpectationsSchema, "example expectations").map((expectation) => {
    const patch = join(dir, expectation.submission);
    if (!existsSync(patch)) throw new InputError(`${file}: submission '${expectation.submission}' does not exist`, { file });
    return { task, expectation, patch };
  });
}

/** Every example submission with its expectation, from `<root>/examples/submissions/<task>/expected.yml`. */
export function packExamples(root: string, only?: string[]): DemoCase[] {
  const examples = join(root, "examples", "submissions");
  if (!existsSync(examples)) throw new InputError(`no examples folder at ${examples}`);
  const cases: DemoCase[] = [];
  for (const id of readdirSync(examples).sort()) {
    if (only?.length && !only.includes(id)) continue;
    if (!existsSync(join(examples, id, "expected.yml"))) continue;
    cases.push(...taskExamples(loadTask(join(root, "tasks", id)), join(examples, id)));
  }
  if (only?.length) {
    const missing = only.filter((id) => !cases.some((c) => c.task.spec.id === id));
    if (missing.length) throw new InputError(`--task: no examples for ${missing.join(", ")}`);
  }
  return cases;
}

const exampleName = (c: DemoCase) => basename(c.patch).replace(/\.(patch|diff)$/, "");

/**
 * The examples a demo evaluates: those marked `quick: true`, or with `all` every one. The quick set
 * keeps the README's first command short; CI runs `--all`. A task with examples but none of them
 * quick is an input error only when it was asked for by name (`--task`): then the quick set would
 * silently hold nothing of it. Examples named in `examples` are those alone, quick or not.
 */
export function demoSet(examples: DemoCase[], opts: { all?: boolean; only?: string[]; examples?: string[] } = {}): DemoCase[] {
  if (opts.examples?.length) {
    // Named examples run whether quick or not: a user re-running one example, or a script evaluating a set one at a time.
    const wanted = opts.examples.map((n) => n.replace(/\.(patch|diff)$/, ""));
    const unknown = wanted.filter((n) => !examples.some((c) => exampleName(c) === n));
    if (unknown.length) {
      const known = [...new Set(examples.map(exampleName))].sort();
      throw new InputError(`--example: no example called ${unknown.map((n) => `'${n}'`).join(", ")}${opts.only?.length ? ` in ${opts.only.join(", ")}` : ""}; the examples are: ${known.join(", ")}`, { field: "example" });
    }
    return examples.filter((c) => wanted.includes(exampleName(c)));
  }
  if (opts.all) return examples;
  const quick = examples.filter((c) => c.expectation.quick);
  for (const id of opts.only ?? []) {
    if (quick.some((c) => c.task.spec.id === id)) continue;
    const theirs = examples.filter((c) => c.task.spec.id === id);
    const file = join(dirname(theirs[0]?.patch ?? ""), "expected.yml");
    throw new InputError(`--task ${id}: none of its ${theirs.length} examples is marked 'quick: true' in ${file}; add --all to evaluate every one`, { file, field: "quick" });
  }
  if (examples.length && !quick.length) {
    throw new InputError(`no example is marked 'quick: true' in ${join(dirname(dirname(examples[0]!.patch)), "*", "expected.yml")}; add --all to evaluate every one`, { field: "quick" });
  }
  return quick;
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`;

/**
 * `probegate demo` (the README's first command): evaluates the quick set of the task pack's example
 * submissions (every one with `--all`), shows progress, prints the verdict table, and writes each
 * result's JSON and markdown report.
 * Exit 0 only when every verdict is the one the example promises.
 */
export async function demoCommand(flags: DemoFlags, io: { stdout: (s: string) => void; stderr: (s: string) => void }): Promise<number> {
  const root = resolve(flags.root ?? PACKAGE_ROOT);
  const examples = packExamples(root, flags.task);
  const cases = demoSet(examples, { all: flags.all, only: flags.task, examples: flags.example });
  if (flags.list) {
    for (const c of cases) io.stdout(`${c.task.spec.id}/${exampleName(c)}\n`);
    return 0;
  }
  const outDir = resolve(flags.outDir);
  const ofTasks = `${count(examples.length, "example submission")} of ${count(new Set(examples.map((c) => c.task.spec.id)).size, "task")}`;
  const which = flags.all ? `all ${ofTasks} (--all)` : `the quick set, ${cases.length} of ${ofTasks} (--all for every one)`;
  io.stderr(`probegate demo: ${which}; reports go to ${outDir}\n`);
  const { pool, evaluations } = await poolFromFlags(flags);
  io.stderr(`${evaluations} at a time on ${pool.gpus.length ? `${pool.gpus.length} GPUs and ` : ""}${pool.cores.length} cores (--jobs, --gpus, --cores)\n`);
  const started = performance.now();
  const rows = await mapConcurrent(cases, evaluations, async (c, i) => {
    const name = exampleName(c);
    // Several run at once: every line says which evaluation it belongs to.
    const tag = evaluations > 1 ? `[${c.task.spec.id}/${name}] ` : "  ";
    io.stderr(`\n[${i + 1}/${cases.length}] ${c.task.spec.id} / ${name}\n`);
    const result = await evaluate({
      task: c.task,
      submission: { kind: "patch", path: c.patch },
      kitDir: flags.root ? join(root, "probes", "kit") : KIT_DIR,
      unsandboxed: flags.unsandboxed,
      pool,
      onEvent: progressPrinter(io.stderr, { verbose: flags.verbose, prefix: tag }),
    });
    const dir = join(outDir, c.task.spec.id);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(join(dir, `${name}.md`), `${renderSummary(result)}\n`);
    // A task this runner cannot run (requires: unmet) is reported as skipped, by name, never as a pass or a failure.
    const skipped = result.error?.phase === "requires" ? result.error.message : null;
    const diffs = skipped ? [] : compareToExpectation(result, c.expectation);
    io.stderr(`${tag}→ ${result.verdict}${skipped ? "  – skipped: the runner lacks what the task requires" : diffs.length ? `  ✗ ${diffs.join("; ")}` : "  ✓ as expected"}\n`);
    return { c, result, diffs, skipped };
  });
  const wallS = (performance.now() - started) / 1000;
  const table = new Table({ head: ["task", "submission", "verdict", "failed probe categories", "expected", "time", ""], style: { head: [], border: [] } });
  for (const { c, result, diffs, skipped } of rows) {
    table.push([
      c.task.spec.id,
      basename(c.patch),
      result.verdict,
      failedCategories(result).join(", "),
      c.expectation.verdict + (c.expectation.failedCategories.length ? ` [${c.expectation.failedCategories.join(", ")}]` : ""),
      formatSeconds(result.durations.totalS),
      skipped ? "skipped" : diffs.length ? "✗" : "✓",
    ]);
  }
  io.stdout(`\n${table.toString()}\n`);
  const caught = rows.filter((r) => r.result.verdict === "probe-rejected" && r.result.official?.passed).length;
  const wrong = rows.filter((r) => r.diffs.length).length;
  const skipped = rows.filter((r) => r.skipped);
  const judged = rows.length - skipped.length;
  io.stdout(`${judged - wrong} of ${judged} verdicts as expected; ${caught} submissions passed every official test and were caught by hidden probes. Wall time ${formatSeconds(wallS)}, ${evaluations} at a time.\n`);
  for (const [task, why] of new Map(skipped.map((r) => [r.c.task.spec.id, r.skipped as string]))) {
    io.stdout(`skipped ${skipped.filter((r) => r.c.task.spec.id === task).length} examples of ${task} (not counted): ${why}\n`);
  }
  const index = rows.map(({ c, result }) => `| ${c.task.spec.id} | [${basename(c.patch)}](${c.task.spec.id}/${basename(c.patch).replace(/\.(patch|diff)$/, "")}.md) | ${result.verdict} | ${failedCategories(result).join(", ")} |`);
  writeFileSync(join(outDir, "index.md"), `# probegate demo\n\n| task | submission | verdict | failed categories |\n|---|---|---|---|\n${index.join("\n")}\n`);
  return wrong ? 1 : 0;
}
