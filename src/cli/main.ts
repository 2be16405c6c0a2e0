import { Command, CommanderError, Option } from "commander";
import { InputError } from "../engine/errors.js";
import { demoCommand } from "./demo-command.js";
import { evalCommand } from "./eval-command.js";
import { schemaCommand } from "./schema-command.js";
import { validateCommand } from "./validate-command.js";
import { verifyCommand } from "./verify-command.js";

export interface Io {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

/** Commander's way to take a repeated option as a list. */
function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** Builds the `probegate` command line; every action resolves to an exit code. */
function program(io: Io, done: (code: number) => void): Command {
  const p = new Command("probegate")
    .description("Gate agent-written pull requests: official tests plus hidden probes (structure, state, functional, memory, time, traffic).")
    .version("0.1.0")
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  p.command("eval")
    .description("evaluate one or more submissions against one task, packed onto the runner; exit 0 resolved, 1 rejected or failed, 2 bad input, 3 error (the worst of several)")
    .requiredOption("--task <dir>", "task folder (holding task.yml)")
    .requiredOption("--submission <path|repo@ref|patch>", "a folder with the whole tree, a .patch/.diff onto the base, or a git repo@ref; repeat it to evaluate several side by side", collect)
    .option("--probes <dir>", "hidden probe folder (overrides the task's probes.path)")
    .option("--out <file>", "write the result JSON here")
    .addOption(new Option("--format <format>", "what to print on stdout").choices(["text", "json", "markdown"]).default("text"))
    .option("--python <path>", "interpreter for {python} (default: $PROBEGATE_PYTHON, /usr/bin/python3, python3)")
    .option("--world-size <n>", "ranks to use (default: the task's gpus)")
    .option("--gpus <list>", "GPUs to use: all, none, or indices like 0,1 (default: all nvidia-smi lists)", "all")
    .option("--cores <n|list>", "CPU cores to use: a count or ids like 0-15 (default: all this process may use)")
    .option("--jobs <n>", "at most this many jobs (test or probe runs) and evaluations at once (default: what the GPUs and cores allow; half the cores' worth of evaluations in progress)")
    .option("--always-probe", "run the hidden probes even when the official tests fail")
    .option("--keep-workspace", "keep the evaluation folder for debugging")
    .option("--unsandboxed", "run submission code without the sandbox, where this machine cannot sandbox (no bubblewrap or user namespaces); the result records it")
    .option("--max-processes <n>", "processes (threads, where a cgroup counts them) one test or probe run may have (default 4096)")
    .option("--max-disk <size>", "bytes one run may write, like 512MiB (default 4GiB)")
    .option("-v, --verbose", "show what tests and probes print (runner-side only)")
    .action(async (flags) => done(await evalCommand(flags, io)));
  p.command("validate")
    .description("check task specs: schema, files, interfaces stated in the prompt, no probe source in the prompt")
    .argument("<taskDirs...>")
    .action((dirs: string[]) => done(validateCommand(dirs, io)));
  p.command("demo")
    .description("evaluate every example submission of the task pack and compare with the expected verdicts")
    .option("--out-dir <dir>", "where reports go", "out/demo")
    .option("--task <ids...>", "only these tasks")
    .option("--root <dir>", "a checkout holding tasks/, probes/ and examples/ (default: this package)")
    .option("--gpus <list>", "GPUs to use: all, none, or indices like 0,1", "all")
    .option("--cores <n|list>", "CPU cores to use: a count or ids like 0-15 (default: all this process may use)")
    .option("--jobs <n>", "at most this many jobs and evaluations at once; 1 evaluates one at a time (default: what the GPUs and cores allow)")
    .option("--unsandboxed", "run submission code without the sandbox, where this machine cannot sandbox (no bubblewrap or user namespaces); the result records it")
    .option("-v, --verbose", "show what tests and probes print")
    .action(async (flags) => done(await demoCommand(flags, io)));
  p.command("scorecard")
    .description("how each agent does, from the app's store: a table, JSON, markdown, or an HTML page with charts")
    .option("--db <file>", "the app's SQLite store (default: $PROBEGATE_DB, else ./probegate.sqlite)")
    .addOption(new Option("--basis <basis>", "which attempts count per PR and task").choices(["first-attempt", "best-of-n", "all"]).default("first-attempt"))
    .option("--repo <owner[/name]>", "only this owner or repository")
    .option("--since <date>", "only PRs whose first attempt finished on or after this date (2026-11-01)")
    .addOption(new Option("--format <format>", "what to write").choices(["table", "json", "markdown", "html"]).default("table"))
    .option("--out <file>", "write to this file instead of stdout (for --format html: a page to open in a browser)")
    .action(async (flags) => {
      // Loaded on use: the store's native SQLite module is not needed by eval, validate or demo.
      const { scorecardCommand } = await import("./scorecard-command.js");
      done(scorecardCommand(flags, io));
    });
  p.command("verify")
    .description("check a result file's schema and signature (key from $PROBEGATE_SIGNING_KEY)")
    .argument("<result.json>")
    .action((file: string) => done(verifyCommand(file, io)));
  p.command("schema")
    .description("write the JSON Schemas of task.yml, the result and the probe protocol")
    .argument("[dir]", "output folder", "schema")
    .action((dir: string) => done(schemaCommand(dir)));
  return p;
}

/** Runs the CLI; bad input prints one paragraph and returns 2. */
export async function main(argv: string[], io: Io): Promise<number> {
  let code = 0;
  try {
    await program(io, (c) => (code = c)).parseAsync(argv, { from: "user" });
    return code;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    if (e instanceof InputError) {
      io.stderr(`probegate: ${e.message}\n`);
      return 2;
    }
    io.stderr(`probegate: internal error: ${(e as Error).stack ?? e}\n`);
    return 3;
  }
}
