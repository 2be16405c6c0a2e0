import { randomBytes } from "node:crypto";
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import picomatch from "picomatch";
import { checksFromRun, failedTimeChecks, mergeRuns, needsAnotherRun, type ProbeCheck } from "../core/probe-outcome.js";
import type { DrawnParams } from "../core/probe-params.js";
import type { LoadedTask } from "./task-load.js";
import { HarnessError } from "./errors.js";
import { runLimits, type EvaluationContext } from "./evaluation-context.js";
import type { JobSetup } from "./evaluation-setup.js";
import { gpuNote } from "./gpu-meter.js";
import { isolationFor } from "./sandbox/job-isolation.js";
import { expandCommand, jobEnv, jobPythonPath, type JobContext } from "./jobs/job-env.js";
import type { PlannedJob } from "./jobs/job-plan.js";
import type { SliceRunner } from "./jobs/job-slice.js";
import { JobPool } from "./jobs/job-pool.js";
import { runsPytest } from "./official-phase.js";
import { copyKit, launchedArgv, sealKey, unsealResults, type GuardConfig } from "./probe-guard.js";
import { runCommand, type RunLimits } from "./run-command.js";
import { resetHooks } from "./workspace.js";

export interface ProbePhaseContext extends Pick<JobContext, "workspace" | "root"> {
  judgeDir: string;
  python: string;
  /** The probe kit (`probegate_probe`) folder, put on PYTHONPATH. */
  kitDir: string;
  /** The probe parameters drawn for this evaluation, handed to every probe process. */
  params: DrawnParams;
  /** A repository gate's PR base tree: mounted read-only for differential probes ($PROBEGATE_BASE_TREE). */
  baseTree?: string | null;
}

export interface ProbeEvents {
  /** `slice`: the GPUs, cores and port the probe runs on, for the progress line. */
  probeStart(probe: string, attempt: number, slice?: string): void;
  probeEnd(probe: string, checks: readonly ProbeCheck[]): void;
  log(probe: string, text: string): void;
}

/** Copies a folder (the probes) into the evaluation folder, read-only for everyone. */
function mountReadOnly(src: string, root: string, name: string): string {
  const dest = join(root, name);
  cpSync(src, dest, { recursive: true, filter: (p) => basename(p) !== "__pycache__" });
  lockReadOnly(dest);
  return dest;
}

/** Makes a copied folder read-only for everyone, the sandbox's user included. */
function lockReadOnly(dest: string): void {
  const lock = (dir: string) => {
    for (const e of readdirSync(dir)) {
      const p = join(dir, e);
      if (statSync(p).isDirectory()) lock(p);
      else chmodSync(p, 0o444);
    }
    chmodSync(dir, 0o555);
  };
  lock(dest);
}

/** The probe files of a task, in a stable order. */
export function listProbes(probesDir: string, pattern: string): string[] {
  const match = picomatch(pattern, { dot: false });
  return readdirSync(probesDir)
    .filter((f) => match(f) && statSync(join(probesDir, f)).isFile())
    .sort();
}

/**
 * Runs every probe process once (time probes up to three times), side by side as the job pool
 * allows, each on its own slice (GPUs, cores, rendezvous port), from a read-only copy of the probe
 * folder outside the workspace, mounted into the sandbox only now. Results come only from each
 * run's own results file (the one file of the judge folder that run can see) and exit status; what
 * a probe prints goes to the runner log alone. Checks come back in probe-file order, whatever
 * order the probes finished in.
 */
export async function runProbes(
  task: LoadedTask,
  ctx: ProbePhaseContext,
  jobs: readonly PlannedJob[],
  slices: SliceRunner,
  limitsFor: (gpuMemoryExceeded: () => boolean) => RunLimits,
  events: ProbeEvents,
): Promise<ProbeCheck[]> {
  if (jobs.length === 0) {
    throw new HarnessError(`no probe in ${task.probesDir} matches '${task.spec.probes.pattern}' (${task.file}: probes.pattern)`, "probes");
  }
  // Copied in only now, outside the workspace. The kit is copied too: wherever it is installed, the
  // sandbox's user can then reach it.
  const mounted = mountReadOnly(task.probesDir, ctx.root, "probes");
  // The kit under this evaluation's own package name, behind its public one, with the launcher
  // every probe process starts through (probe-guard.ts; docs/sandbox.md, "Gaming defences").
  const kitCopy = copyKit(ctx.kitDir, join(ctx.root, "kit"));
  lockReadOnly(kitCopy.dir);
  const kit = kitCopy.dir;
  // What the official run's argv and environment looked like: the probe's are made to match.
  const officialArgv = expandCommand(task.spec.official.command, { python: ctx.python, junit: join(ctx.judgeDir, "official", "junit.xml"), workspace: ctx.workspace });
  const pytestLike = runsPytest(officialArgv);
  const resultsDir = join(ctx.judgeDir, "results");
  mkdirSync(resultsDir, { recursive: true });
  const runOne = (job: PlannedJob) =>
    slices.run(job, async ({ ctx: jc, lease, gpuMemoryExceeded }) => {
      const probe = job.name;
      const runs: ProbeCheck[][] = [];
      let retried: string[] = [];
      do {
        const attempt = runs.length + 1;
        events.probeStart(probe, attempt, JobPool.describe(lease) + (attempt === 1 ? JobPool.waitNote(lease) : ""));
        const results = join(resultsDir, `${probe}.${attempt}.jsonl`);
        writeFileSync(results, "");
        const probePath = join(mounted, job.file ?? "");
        const launch = launchedArgv(expandCommand(task.spec.probes.command, { python: ctx.python, probe: probePath, workspace: ctx.workspace }), probePath, kitCopy.launcher);
        const key = sealKey();
        const suite = `probegate-${randomBytes(12).toString("hex")}`;
        const plugins = (task.spec.setup?.pytestPlugins ?? []).map((p) => ` -p ${p}`).join("");
        const env = jobEnv(jc, {
          // The same shape as the official run's environment (a fresh suite name of the same form).
          ...(pytestLike ? { PYTEST_ADDOPTS: `-o junit_suite_name=${suite}${plugins}` } : {}),
          PROBEGATE_RESULTS: results,
          PROBEGATE_PROBE_DIR: mounted,
          PROBEGATE_SEED: String(ctx.params.seed),
          PROBEGATE_PARAMS: JSON.stringify(ctx.params.values),
          PYTHONPATH: jobPythonPath(jc, kit, mounted),
          ...(ctx.baseTree ? { PROBEGATE_BASE_TREE: ctx.baseTree } : {}),
        });
        const isolation = await isolationFor(jc.isolation, {
          cwd: ctx.workspace,
          readOnly: [kit, mounted, ...(jc.setupDir ? [jc.setupDir] : []), ...(ctx.baseTree ? [ctx.baseTree] : [])],
          readWrite: [ctx.workspace, env.HOME as string, results],
          readOnlyInside: [join(ctx.workspace, ".git")],
        });
        const guard: GuardConfig = {
          key: key.toString("hex"),
          kit: kitCopy.alias,
          command: officialArgv,
          pythonpath: jobPythonPath(jc),
          workspace: ctx.workspace,
          watched: [kit, mounted, results],
        };
        const input = launch.launched ? `${JSON.stringify(guard)}\n` : undefined;
        const run = await runCommand(launch.argv, { cwd: ctx.workspace, env, limits: limitsFor(gpuMemoryExceeded), isolation, cpus: jc.cpus, input });
        events.log(probe, run.log);
        if (run.spawnError) throw new HarnessError(`probe ${probe} could not start: ${run.spawnError}`, "probes");
        const rawResults = existsSync(results) ? readFileSync(results, "utf8") : "";
        // Only lines the kit sealed count once the kit announced itself (probe-guard.ts).
        const resultsText = launch.launched ? unsealResults(rawResults, key, probe).text : rawResults;
        runs.push(checksFromRun({ probe, resultsText, exitCode: run.exitCode, signal: run.signal, limit: run.limit, durationS: run.durationS }));
        if (attempt === 1) retried = failedTimeChecks(runs[0] ?? []);
      } while (retried.length > 0 && needsAnotherRun(runs, retried));
      const merged = mergeRuns(runs);
      events.probeEnd(probe, merged);
      return merged;
    });
  const settled = await Promise.allSettled(jobs.map(runOne));
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
  return settled.flatMap((s) => (s.status === "fulfilled" ? s.value : []));
}

/** "1 of 4 passed, 3 errored": every check counted as what it ended as (an error is no pass). */
export function checkTally(checks: ReadonlyArray<{ status: string }>): string {
  const n = (s: string) => checks.filter((c) => c.status === s).length;
  const rest = [n("failed") && `${n("failed")} failed`, n("error") && `${n("error")} errored`, n("skipped") && `${n("skipped")} skipped`].filter(Boolean);
  return `${n("passed")} of ${checks.length} passed${rest.length ? `, ${rest.join(", ")}` : ""}`;
}

/** "2 GPUs and 16 cores" for the probe phase's progress line. */
function describePool(pool: JobPool): string {
  const s = pool.shape();
  return s.gpus ? `${s.gpus} GPU${s.gpus === 1 ? "" : "s"} and ${s.cores} cores` : `${s.cores} core${s.cores === 1 ? "" : "s"}`;
}

/**
 * The probe phase of an evaluation: first the hooks the official run may have planted for the
 * probe processes (a sitecustomize.py, say) are reset, then every probe job runs, packed on the
 * runner's pool. Its duration is the phase's wall time, from its start line to its end line.
 */
export async function probePhase(ev: EvaluationContext, { runner, jobs, python, pool }: JobSetup): Promise<void> {
  const { opts, spec, ws, record } = ev;
  ws.resets.push(...(await resetHooks(ws)));
  ev.emit({ type: "phase-start", phase: "probes", detail: `${jobs.probes.length} probe processes, packed on ${describePool(pool)}` });
  const t = performance.now();
  record.checks = await runProbes(opts.task, { workspace: ws.dir, root: ws.root, judgeDir: ws.judgeDir, python, kitDir: opts.kitDir, params: ev.params, baseTree: ws.prBase?.dir ?? null }, jobs.probes, runner, (g) => runLimits(ev, spec.probes.timeout, g), {
    probeStart: (probe, attempt, slice) => ev.emit({ type: "probe-start", probe, attempt, slice }),
    probeEnd: (probe, cs) => ev.emit({ type: "probe-end", probe, checks: cs }),
    log: (probe, text) => ev.emit({ type: "log", source: `probe ${probe}`, text }),
  });
  record.probesS = ev.clock.since(t);
  ev.emit({ type: "phase-end", phase: "probes", durationS: record.probesS, detail: `${checkTally(record.checks)}${gpuNote(runner.probesPeak())}` });
}
