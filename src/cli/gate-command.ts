import { Option, type Command } from "commander";
import { registerGateInit } from "./gate-init-command.js";
import { interruptible } from "./interruptible.js";
import type { Io } from "./main.js";

/**
 * `probegate gate …`: commands about repository gates (tasks with `base: {pr: true}`). Each
 * subcommand is added here, its work in a module of its own, loaded on use.
 */
export function registerGate(p: Command, io: Io, done: (code: number) => void): void {
  const gate = p.command("gate").description("repository gates (tasks with base: {pr: true}): write one for a repository, replay its merged PRs through one");
  registerGateInit(gate, io, done);
  gate
    .command("replay")
    .description("replay merged PRs of a repository through a gate, as if an agent had opened each (head = the merge or squash commit, base = its first parent): one result JSON per PR in --out-dir (kept and not run again), and a table; exit 0 when every PR was judged, 3 when one could not be (verdict error, or no result)")
    .requiredOption("--repo <dir>", "the repository: a clone's top folder or a bare mirror (its git folder)")
    .requiredOption("--task <dir>", "the gate's task folder (holding task.yml)")
    .option("--shas <shas...>", "these commits, in this order (any commit: its base is its first parent)")
    .option("--since <date>", "first-parent commits of --ref committed on or after this date (2025-06-01), newest first")
    .option("--count <n>", "at most this many first-parent commits of --ref, newest first (with --since: of those)")
    .option("--ref <ref>", "the branch, tag or commit whose first-parent history --since/--count walk", "HEAD")
    .option("--paths <globs...>", "the paths the gate watches, globs ('!' excludes): with --since/--count only commits changing one are taken, and the table lists them; default: the gate's own (official.select.fromPaths, select.tests, official.files)")
    .option("--all-paths", "with --since/--count: every commit, whatever it changes")
    .option("--out-dir <dir>", "one result JSON per PR (<sha>.json, its progress log <sha>.json.log); default replay-<task id>")
    .option("--table <file>", "also write the table as markdown here, with an empty explanation column for a person to fill in")
    .option("--force", "evaluate again PRs whose result JSON is already in --out-dir")
    .option("--table-only", "evaluate nothing: tabulate the result JSONs already in --out-dir")
    .option("--inject <patches...>", "instead of each PR itself: each patch committed on top of it (a regression the gate must catch), judged against the PR's base; results inject-<name>-<sha>.json")
    .option("--seed <n>", "seed of the probe parameters, the same for every PR", "1")
    .option("--jobs <n>", "PRs evaluated at once; their test and probe jobs share the runner's GPUs and cores", "1")
    .option("--gpus <list>", "GPUs to use: all, none, or indices like 0,1", "all")
    .option("--cores <n|list>", "CPU cores to use: a count or ids like 0-15 (default: all this process may use)")
    .option("--probes <dir>", "hidden probe folder (overrides the task's probes.path)")
    .option("--python <path>", "interpreter for {python}, over the task's environment")
    .option("--world-size <n>", "ranks to use (default: the task's gpus)")
    .addOption(new Option("--no-always-probe", "skip the hidden probes of a PR whose official tests fail (by default they run: a replay wants every number)"))
    .option("--unsandboxed", "run the repository's code without the sandbox, where this machine cannot sandbox; results record it")
    .option("--max-processes <n>", "processes one test or probe run may have (default 4096)")
    .option("--max-disk <size>", "bytes one run may write, like 512MiB (default 4GiB)")
    .option("--keep-workspace", "keep each evaluation folder for debugging")
    .option("-v, --verbose", "show what tests and probes print (always in each PR's .log)")
    .action(async (flags) => {
      const { gateReplayCommand } = await import("./gate-replay-command.js");
      done(await interruptible((signal) => gateReplayCommand(flags, io, { signal })));
    });
}
