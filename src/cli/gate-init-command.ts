import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import type { Command } from "commander";
import { InputError } from "../engine/errors.js";
import { gateInit } from "../engine/gate-init/gate-init.js";
import { loadTask } from "../engine/task-load.js";
import type { Io } from "./main.js";
import { validateTask } from "./validate-command.js";

export interface GateInitFlags {
  paths?: string[];
  out?: string;
  ref: string;
  id?: string;
  tests?: string[];
  src?: string[];
  requirements?: string[];
  extras?: string[];
  maxHops?: string;
  throughPackages?: boolean;
  python?: string;
  force?: boolean;
}

function hops(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InputError(`gate init: --max-hops must be a whole number of imports, 1 or more (1: tests that import a gated module themselves), got '${v}'`, { field: "--max-hops" });
  return n;
}

/**
 * `probegate gate init <repo>`: writes a repository gate, prints its report (GATE.md) and validates
 * it as `probegate validate` would. Exit 0 when it validates, 1 when not (a bug of gate init: the
 * problems are printed), 2 for what the repository or the flags lack (the message names the flag).
 */
export async function gateInitCommand(repo: string, flags: GateInitFlags, io: Io): Promise<number> {
  const started = performance.now();
  const scratch = mkdtempSync(join(tmpdir(), "probegate-gate-init-"));
  try {
    const r = await gateInit(
      {
        repo,
        paths: flags.paths ?? [],
        ref: flags.ref,
        out: flags.out,
        id: flags.id,
        tests: flags.tests ?? [],
        src: flags.src ?? [],
        requirements: flags.requirements ?? [],
        extras: flags.extras ?? null,
        maxHops: flags.maxHops === undefined ? null : hops(flags.maxHops),
        throughPackages: flags.throughPackages,
        python: flags.python,
        force: flags.force,
      },
      scratch,
    );
    io.stdout(r.report);
    const problems = validateTask(loadTask(r.dir));
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const rel = relative(process.cwd(), r.dir);
    const where = !rel ? "." : rel.startsWith("..") ? r.dir : rel;
    io.stdout(`\nwrote ${r.files.map((f) => `${where}/${f}`).join(", ")} in ${seconds} s\n`);
    if (problems.length) {
      io.stdout(`probegate validate ${where}: ${problems.length} problem${problems.length === 1 ? "" : "s"}\n${problems.map((p) => `  ${p}`).join("\n")}\n`);
      return 1;
    }
    io.stdout(`probegate validate ${where}: ok\nnext: probegate eval --task ${where} --submission ${repo}@<head sha> --pr-base <base sha>\n`);
    return 0;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Adds `init` to the `gate` command group. */
export function registerGateInit(gate: Command, io: Io, done: (code: number) => void): void {
  gate
    .command("init")
    .description("write a repository gate (a task with base: {pr: true}) for paths of a repository: tests selected from its import graph, the environment it declares, its modules' public interfaces as the prompt, and a generated differential probe over those tests; prints why each choice was made (also GATE.md) and validates it")
    .argument("<repo>", "the repository: a local checkout or a URL git can clone")
    .option("--paths <globs...>", "the paths to gate, globs relative to the repository ('!' excludes), e.g. 'mypkg/comm/**'")
    .option("--out <dir>", "the gate's folder, named for its id (default: ./<id>)")
    .option("--ref <rev>", "the commit to read (the gate's base for planning)", "HEAD")
    .option("--id <id>", "the task id (default: the --out folder's name, else <repository name>-gate)")
    .option("--tests <globs...>", "the repository's test files, over pytest's discovery (test_*.py / *_test.py under its testpaths)")
    .option("--src <dirs...>", "more folders on sys.path that imports start from (src/ and pytest's pythonpath are read already)")
    .option("--requirements <files...>", "the repository's requirement files (pip's format) the environment is built from, over the ones gate init picks")
    .option("--extras <names...>", "pyproject.toml extras the tests need, over the ones gate init picks (test, tests, testing or dev)")
    .option("--max-hops <n>", "select only tests whose import chain to a gated module is at most n imports long (1: tests that import it themselves); default: any length, through any module of the tree")
    .option("--through-packages", "select tests through every package __init__.py their imports run, as the interpreter runs them (a test importing a.b.timer then selects every module a/b/__init__.py imports); default: only through the modules they import and the names they take from packages")
    .option("--python <path>", "the interpreter that reads pyproject.toml (3.11+: tomllib; default: $PROBEGATE_PYTHON, /usr/bin/python3)")
    .option("--force", "overwrite --out when it is not empty")
    .action(async (repo: string, flags: GateInitFlags) => done(await gateInitCommand(repo, flags, io)));
}
