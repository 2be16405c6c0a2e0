import type { GeneratedMutant } from "../../core/mutants/mutants-score.js";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { addedLines, type ChangedLines } from "../../core/mutants/patch-lines.js";
import { mutantId } from "../../core/mutants/mutants-file.js";
import { InputError } from "../errors.js";
import { git } from "../git.js";
import type { LoadedTask } from "../task-load.js";
import { createWorkspace } from "../workspace.js";

/**
 * The interpreter that runs the mutation library (cosmic-ray with the probegate_mutants provider):
 * `--mutation-python`, else $PROBEGATE_MUTATION_PYTHON, else the CI's venv built from
 * python/probegate_mutants/requirements.lock.
 */
export const DEFAULT_MUTATION_PYTHON = "/var/cache/probegate/mutation/bin/python";

/** Every mutant of a reference change, and what was left out. */
export interface Generation {
  mutants: GeneratedMutant[];
  operators: number;
  invalid: number;
  duplicate: number;
  files: ChangedLines[];
}

export interface RawMutant {
  operator: string;
  path: string;
  line: number;
  column: number;
  occurrence: number;
  source: string;
}

/** What the generator answers: the operators it ran, the mutants, what it left out; names of `functions` no file defines. */
export interface RawGeneration {
  operators: string[];
  mutants: RawMutant[];
  invalid: number;
  duplicate: number;
  functionsMissing?: string[];
}

/**
 * Runs the generator on `files` (each with the lines to mutate, and for a gate the functions they
 * must lie in). `set: "gate"` adds the value-keeping time, memory and traffic operators.
 */
export async function runGenerator(python: string, files: Array<{ path: string; source: string; lines: number[]; functions?: string[] }>, set?: "gate", operators?: string[]): Promise<RawGeneration> {
  if (!existsSync(python)) {
    throw new InputError(`mutation library: no interpreter at ${python}; build it with uv (python/probegate_mutants/requirements.lock, then the package itself: see docs/mutants.md) or pass --mutation-python`, { field: "--mutation-python" });
  }
  const r = await execa(python, ["-m", "probegate_mutants.generate"], { input: JSON.stringify({ files, ...(set ? { set } : {}), ...(operators ? { operators } : {}) }), reject: false, maxBuffer: 512 * 2 ** 20 });
  if (r.exitCode !== 0) throw new InputError(`mutation library: ${python} -m probegate_mutants.generate failed (exit ${r.exitCode}): ${String(r.stderr).trim().split("\n").slice(-3).join("; ")}`, { field: "--mutation-python" });
  return JSON.parse(String(r.stdout)) as RawGeneration;
}

export const lineOf = (source: string, line: number) => (source.split("\n")[line - 1] ?? "").trim();

/**
 * Makes the mutants of a task's reference change: the base with the reference applied (the
 * engine's own workspace, judge files reset), then cosmic-ray's operators and probegate's on the
 * Python lines the reference adds or modifies, each mutant written back as a unified diff against
 * the base. Only generation: nothing of the task runs here.
 */
export async function generateMutants(task: LoadedTask, referencePatch: string, python: string): Promise<Generation> {
  let patchText: string;
  try {
    patchText = readFileSync(referencePatch, "utf8");
  } catch (e) {
    throw new InputError(`${referencePatch}: cannot read the reference change (${(e as NodeJS.ErrnoException).code ?? String(e)}); validate --mutants mutates <examples>/<task>/reference.patch`, { file: referencePatch });
  }
  let changed: ChangedLines[];
  try {
    changed = addedLines(patchText);
  } catch (e) {
    throw new InputError(`${referencePatch}: ${(e as Error).message}`, { file: referencePatch });
  }
  const ws = await createWorkspace(task, { kind: "patch", path: referencePatch });
  try {
    const reset = new Set(ws.resets.map((r) => r.path));
    // Judge files the engine resets (official tests) and non-Python files are not mutated.
    const files = changed.filter((f) => f.path.endsWith(".py") && !reset.has(f.path) && existsSync(join(ws.dir, f.path)));
    const sources = new Map(files.map((f) => [f.path, readFileSync(join(ws.dir, f.path), "utf8")]));
    const raw = await runGenerator(python, files.map((f) => ({ path: f.path, source: sources.get(f.path) as string, lines: f.lines })));
    const mutants: GeneratedMutant[] = [];
    for (const m of raw.mutants) {
      const file = join(ws.dir, m.path);
      const original = sources.get(m.path) as string;
      writeFileSync(file, m.source);
      try {
        await git(ws.dir, ["add", "--all", "--force"]);
        const diff = await git(ws.dir, ["diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "HEAD"]);
        mutants.push({ id: mutantId(m), operator: m.operator, path: m.path, line: m.line, column: m.column, occurrence: m.occurrence, diff: `${diff}\n`, change: { before: lineOf(original, m.line), after: lineOf(m.source, m.line) } });
      } finally {
        writeFileSync(file, original);
      }
    }
    return { mutants, operators: raw.operators.length, invalid: raw.invalid, duplicate: raw.duplicate, files };
  } finally {
    ws.dispose();
  }
}
