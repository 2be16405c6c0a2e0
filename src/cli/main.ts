import { Command, CommanderError, Option } from "commander";
import { PROBEGATE_VERSION } from "../core/version.js";
import { InputError } from "../engine/errors.js";
import { demoCommand } from "./demo-command.js";
import { envBuildCommand, envListCommand } from "./env-command.js";
import { evalCommand } from "./eval-command.js";
import { registerGate } from "./gate-command.js";
import { interruptible } from "./interruptible.js";
import { mergePowerCommand, powerCommand, type PowerFlags } from "./power-command.js";
import { mutantsCommand, type MutantsFlags } from "./mutants-command.js";
import { schemaCommand } from "./schema-command.js";
import { taskImportCommand } from "./task-import-command.js";
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
    .version(PROBEGATE_VERSION)
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  p.command("eval")
    .description("evaluate one or more submissions against one task, packed onto the runner; exit 0 resolved, 1 rejected or failed, 2 bad input, 3 error (the worst of several)")
    .requiredOption("--task <dir>", "task folder (holding task.yml)")
    .requiredOption("--submission <path|repo@ref|patch>", "a folder with the whole tree, a .patch/.diff onto the base, or a git repo@ref; repeat it to evaluate several side by side", collect)
    .option("--pr-base <sha>", "a repository gate (task base: {pr: true}): the PR's base commit; the submission is then the PR's head as repo@sha")
    .option("--probes <dir>", "hidden probe folder (overrides the task's probes.path)")
    .option("--out <file>", "write the result JSON here")
    .addOption(new Option("--format <format>", "what to print on stdout").choices(["text", "json", "markdown"]).default("text"))
    .option("--python <path>", "interpreter for {python}, over the task's environment (default: the task's environment when task.yml declares one, else $PROBEGATE_PYTHON, /usr/bin/python3, python3)")
    .option("--world-size <n>", "ranks to use (default: the task's gpus)")
    .option("--gpus <list>", "GPUs to use: all, none, or indices like 0,1 (default: all nvidia-smi lists)", "all")
    .option("--cores <n|list>", "CPU cores to use: a count or ids like 0-15 (default: all this process may use)")
    .option("--jobs <n>", "at most this many jobs (test or probe runs) and evaluations at once (default: what the GPUs and cores allow; half the cores' worth of evaluations in progress)")
    .option("--always-probe", "run the hidden probes even when the official tests fail")
    .option("--keep-workspace", "keep the evaluation folder for debugging")
    .option("--seed <n>", "seed of the probe parameters (a result's params.seed), to reproduce an evaluation; default: drawn fresh")
    .option("--db <file>", "a store of known-good outcomes (the app's): read the result with its quarantined checks' failures as warnings, as the app does")
    .option("--known-good", "with --db: record this run's checks as outcomes on a known-good submission (a canary run of the reference)")
    .option("--unsandboxed", "run submission code without the sandbox, where this machine cannot sandbox (no bubblewrap or user namespaces); the result records it")
    .option("--max-processes <n>", "processes (threads, where a cgroup counts them) one test or probe run may have (default 4096)")
    .option("--max-disk <size>", "bytes one run may write, like 512MiB (default 4GiB)")
    .option("-v, --verbose", "show what tests and probes print (runner-side only)")
    .action(async (flags) => done(await evalCommand(flags, io)));
  p.command("validate")
    .description("check task specs: schema, files, interfaces stated in the prompt, requirements named by probes, no probe source in the prompt; with --power, measure the probes on the task's examples (exit 1 when validation fails)")
    .argument("<taskDirs...>")
    .option("--power", "evaluate the reference and every example submission and print the probes × submissions matrix")
    .option("--runs <n>", "evaluations of each correct submission (false rejections), with --power", "1")
    .option("--examples <dir>", "folder holding <task>/expected.yml and the example patches (default: the checkout's examples/submissions)")
    .option("--db <file>", "record every run of a correct example as known-good outcomes (quarantine) in this store, with --power")
    .option("--seed <n>", "seed of the first evaluation's probe parameters (the next get seed+1, …), with --power; default: fresh")
    .option("--jobs <n>", "evaluations at a time, with --power", "1")
    .option("--gpus <list>", "GPUs the --power evaluations may use: all, none, or indices like 0,1 (default: all nvidia-smi lists)")
    .option("--cores <n|ids>", "cores the --power evaluations may use: a count or ids like 0-7 (default: every core of this process)")
    .option("--budget <seconds>", "start no evaluation after this many seconds, with --power; the report covers what ran")
    .option("--unsandboxed", "run submission code without the sandbox, with --power")
    .option("--correct-only", "with --power: evaluate only the correct examples (their --runs), for more false-rejection runs after a full one; measures no power")
    .option("--mutants", "make mutants of each task's reference change (a repository gate: of its upstream files at a pinned commit, mutants.yml upstream) and report what the official tests and the probes kill (officialSurvivalRate, probeScore); exit 1 under the task's threshold (mutants.yml)")
    .option("--cache <dir>", "with --mutants: cache of evaluated mutants (default .probegate/mutants)")
    .option("--mutant-timeout <seconds>", "with --mutants: wall clock of each mutant's test and probe runs (default: from the reference's own durations)")
    .option("--mutation-python <path>", "with --mutants: interpreter with cosmic-ray and probegate_mutants (default: $PROBEGATE_MUTATION_PYTHON, /var/cache/probegate/mutation/bin/python)")
    .option("--python <path>", "with --mutants: interpreter for {python} (default: $PROBEGATE_PYTHON, /usr/bin/python3, python3)")
    .option("--repo <path|url>", "with --mutants on a repository gate: the upstream repository whose pinned commit (mutants.yml upstream.commit) is mutated (default: upstream.repo)")
    .addOption(new Option("--format <format>", "what to print on stdout, with --power or --mutants").choices(["text", "json", "markdown"]).default("text"))
    .action(async (dirs: string[], flags: PowerFlags & MutantsFlags & { power?: boolean; mutants?: boolean }) => {
      const mutantsOnly = (["cache", "mutantTimeout", "mutationPython", "python", "repo"] as const).filter((k) => flags[k] !== undefined);
      if (flags.mutants) {
        const wrong = [flags.power && "--power", ...(["db", "seed", "correctOnly"] as const).filter((k) => flags[k] !== undefined).map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`), flags.runs !== "1" && "--runs"].filter(Boolean);
        if (wrong.length) throw new InputError(`validate --mutants: ${wrong.join(", ")} only mean something with --power.`);
        return done(await interruptible((signal) => mutantsCommand(dirs, flags, io, signal)));
      }
      if (mutantsOnly.length) throw new InputError(`validate: ${mutantsOnly.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(", ")} only mean something with --mutants.`);
      if (flags.power) return done(await interruptible((signal) => powerCommand(dirs, flags, io, signal)));
      const powerOnly = (["db", "seed", "examples", "budget", "unsandboxed", "gpus", "cores", "correctOnly"] as const).filter((k) => flags[k] !== undefined);
      if (powerOnly.length || flags.runs !== "1" || flags.jobs !== "1" || flags.format !== "text") {
        const names = powerOnly.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
        throw new InputError(`validate: ${[...names, flags.runs !== "1" && "--runs", flags.jobs !== "1" && "--jobs", flags.format !== "text" && "--format"].filter(Boolean).join(", ")} only mean something with --power.`);
      }
      done(validateCommand(dirs, io));
    });
  p.command("merge-power")
    .description("merge the reports of several `validate --power --format json` runs of a task (calls cut short, runners side by side) into one, judged again on the summed matrix; exit 1 when a merged task fails")
    .argument("<reports...>", "JSON files, each the output of validate --power --format json")
    .addOption(new Option("--format <format>", "what to print on stdout").choices(["text", "json", "markdown"]).default("text"))
    .action((files: string[], flags: { format: string }) => done(mergePowerCommand(files, flags, io)));
  p.command("demo")
    .description("evaluate the quick set of the task pack's example submissions (quick: true in expected.yml; --all: every one) and compare with the expected verdicts")
    .option("--out-dir <dir>", "where reports go", "out/demo")
    .option("--all", "evaluate every example submission, not only the quick set")
    .option("--task <ids...>", "only these tasks (their quick set, unless --all)")
    .option("--example <names...>", "only these examples (file names, .patch optional), quick or not")
    .option("--list", "print the examples it would evaluate, task/name a line, and evaluate none")
    .option("--root <dir>", "a checkout holding tasks/, probes/ and examples/ (default: this package)")
    .option("--gpus <list>", "GPUs to use: all, none, or indices like 0,1", "all")
    .option("--cores <n|list>", "CPU cores to use: a count or ids like 0-15 (default: all this process may use)")
    .option("--jobs <n>", "at most this many jobs and evaluations at once; 1 evaluates one at a time (default: what the GPUs and cores allow)")
    .option("--unsandboxed", "run submission code without the sandbox, where this machine cannot sandbox (no bubblewrap or user namespaces); the result records it")
    .option("-v, --verbose", "show what tests and probes print")
    .action(async (flags) => done(await demoCommand(flags, io)));
  p.command("task")
    .description("make and manage tasks")
    .command("import")
    .description("make a task folder from a real change: base, official fail-to-pass and pass-to-pass tests (found by running them), the change as reference submission, prompt and probe skeletons")
    .requiredOption("--repo <dir|url>", "the repository (a git folder or a URL git can clone)")
    .requiredOption("--pr-base <sha>", "the commit the change starts from (the PR's parent)")
    .requiredOption("--pr-head <sha>", "the commit with the change (the PR's head or merge)")
    .requiredOption("--tests <globs...>", "the change's test files (paths or globs); the rest of the change is the submission's")
    .requiredOption("--out <dir>", "the new task folder, tasks/<id> of a task pack")
    .option("--exclude <strings...>", "deselect test ids holding any of these (tests this kind of runner cannot run): they never run; listed in import.yml")
    .option("--repo-url <url>", "the repository URL task.yml and import.yml record (default: --repo when a URL, else the clone's origin remote)")
    .option("--pass-to-pass-only", "allow a change no test fails before (a performance PR): the official tests are the pass-to-pass ones (with no changed test file: the head's files --tests names), and the hidden probes carry the requirement")
    .option("--keep <globs...>", "more files of the base to keep in the snapshot (a LICENSE, data the tests read)")
    .option("--trace-imports", "keep the Python files the change and its tests import from the base (a static trace)")
    .addOption(new Option("--base-as <how>", "the base: a pruned snapshot in the task, or the git ref (with the PR's tests as overlay)").choices(["snapshot", "git"]).default("snapshot"))
    .option("--title <text>", "the task's title (default: the head commit's subject)")
    .addOption(new Option("--area <area>", "the task's area").choices(["training", "inference", "rl", "other"]).default("other"))
    .option("--gpus <n>", "GPUs (ranks) the task wants on a GPU runner", "0")
    .option("--setup <dir>", "judge-owned files beside the workspace, used for these runs and kept as the task's setup:")
    .option("--pytest-plugin <modules...>", "modules of --setup loaded with pytest -p")
    .option("--requires-torch <range>", "the task's requires.torch, like '>=2.1'")
    .option("--requires-gpus <n>", "the task's requires.gpus")
    .option("--requires-cuda", "the task's requires.cuda")
    .option("--python <path>", "interpreter for the test runs (default: $PROBEGATE_PYTHON, /usr/bin/python3, python3)")
    .option("--world-size <n>", "PROBEGATE_WORLD_SIZE for the test runs", "1")
    .option("--timeout <s>", "seconds per test run, and the task's official.timeout", "600")
    .action(async (flags) => done(await taskImportCommand(flags, io)));
  const env = p.command("env").description("the tasks' pinned Python environments (task.yml environment:), built once per runner in $PROBEGATE_ENV_DIR (default /var/cache/probegate/envs)");
  env
    .command("build")
    .description("build each task's environment from its lock (or, with --tree, from a checkout's requirements for a gate with environment.fromTree) with uv, or find it built; prints task, lock hash, python, torch, built/reused, seconds, size (exit 3 when one cannot be built)")
    .argument("<taskDirs...>")
    .option("--json", "print the table as JSON")
    .option("--tree <dir>", "for a gate whose environment follows its repository (environment.fromTree): a checkout of the base to read its requirements from")
    .action(async (dirs: string[], flags: { json?: boolean; tree?: string }) => done(await envBuildCommand(dirs, flags, io)));
  env
    .command("list")
    .description("the environments built on this runner")
    .option("--json", "print them as JSON")
    .action((flags: { json?: boolean }) => done(envListCommand(flags, io)));
  p.command("scorecard")
    .description("how each agent does, from the app's store or a folder of result files: a table, JSON, markdown, or an HTML page with charts")
    .option("--db <file>", "the app's SQLite store (default: $PROBEGATE_DB, else ./probegate.sqlite)")
    .option("--results <dir>", "score the result JSON files under this folder instead of a store (sidecars: NAME.context.json)")
    .option("--key-env <name>", "with --results: count only results signed with the key in this variable (default: $PROBEGATE_SIGNING_KEY when set)")
    .addOption(new Option("--basis <basis>", "which attempts count per PR and task").choices(["first-attempt", "best-of-n", "all"]).default("first-attempt"))
    .option("--repo <owner[/name]>", "only this owner or repository")
    .option("--since <date>", "only PRs whose first attempt finished on or after this date (2026-11-01)")
    .option("--probe-set <version>", "only attempts judged by this probe set: a prefix of the evaluator commit, the probes repository's commit, or the probe folder's hash")
    .addOption(new Option("--format <format>", "what to write").choices(["table", "json", "markdown", "html"]).default("table"))
    .option("--out <file>", "write to this file instead of stdout (for --format html: a page to open in a browser)")
    .option("--server-url <url>", "where PR links in the HTML page point (default: $GITHUB_SERVER_URL, else https://github.com)")
    .option("--strict", "with --results: exit 1 when any file was left out (unreadable, invalid, unsigned, duplicate)")
    .action(async (flags) => {
      // Loaded on use: the store's native SQLite module is not needed by eval, validate or demo.
      const { scorecardCommand } = await import("./scorecard-command.js");
      done(scorecardCommand(flags, io));
    });
  p.command("doctor")
    .description("check that this runner can sandbox an evaluation, and print what it lacks with the fix for each; exit 0 only when it can")
    .option("--python <path>", "the interpreter task commands run with, whose torch, CUDA and NCCL are checked (default: $PROBEGATE_PYTHON, /usr/bin/python3, python3)")
    .option("--gpus <n>", "GPUs this runner must have (a GPU runner's count); fewer is a failure")
    .option("--disk <path>", "where evaluations write (default: $TMPDIR, else /tmp)")
    .addOption(new Option("--format <format>", "what to print").choices(["table", "json"]).default("table"))
    .option("--json", "same as --format json")
    .action(async (flags) => {
      const { doctorCommand } = await import("./doctor-command.js");
      done(await doctorCommand(flags, io));
    });
  const store = p.command("store").description("the app's SQLite store");
  store
    .command("backup")
    .description("copy the live store (the app may keep running) to a new file, with SQLite's online backup API, checked before it is named")
    .argument("<dest>", "the backup file to write (must not exist)")
    .option("--db <file>", "the app's store (default: $PROBEGATE_DB, else ./probegate.sqlite)")
    .action(async (dest: string, flags: { db?: string }) => {
      // Loaded on use: the store's native SQLite module is not needed by eval, validate or demo.
      const { storeBackupCommand } = await import("./store-command.js");
      done(await storeBackupCommand(dest, flags, io));
    });
  registerGate(p, io, done);
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
