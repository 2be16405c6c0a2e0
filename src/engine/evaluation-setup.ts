import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { unmetRequirements } from "../core/task-environment.js";
import { environmentLabel } from "./environment/task-request.js";
import type { EvaluationContext } from "./evaluation-context.js";
import { HarnessError } from "./errors.js";
import { availableCpus } from "./host.js";
import { planIsolation } from "./sandbox/job-isolation.js";
import { JobPool } from "./jobs/job-pool.js";
import { planJobs, type PlannedJob } from "./jobs/job-plan.js";
import { SliceRunner } from "./jobs/job-slice.js";
import { listProbes } from "./probe-phase.js";
import { claimEvaluationUid } from "./claims/runner-claims.js";
import { evaluationUid } from "./sandbox/sandbox.js";
import { readGpuNodes } from "./sandbox/gpu-devices.js";

/** What the job phases run with: the interpreter, the runner's pool, every job planned, and the runner of their slices. */
export interface JobSetup {
  python: string;
  pool: JobPool;
  jobs: { official: PlannedJob; probes: PlannedJob[] };
  runner: SliceRunner;
}

/**
 * Everything between the workspace and the first job: the host facts, the refusal to run
 * unsandboxed where the host cannot sandbox ("sandbox"), the task's `requires:` against this runner
 * ("requires"), the job pool, every job planned and checked against the runner (InputError where
 * one can never fit), and the isolation plan. No submission code runs before all of it passed.
 * Each fact is recorded as soon as it is known, so a later refusal still reports it.
 */
export async function setUpJobs(ev: EvaluationContext): Promise<JobSetup> {
  const { opts, spec, ws, record } = ev;
  // A first build of the task's environment can take minutes: the time waited for it once the
  // workspace was ready is the runner's, not the submission's wall clock.
  const waitFrom = performance.now();
  const env = ev.hostFacts.environment ? await ev.hostFacts.environment : null;
  ev.clock.addQueued(performance.now() - waitFrom);
  if (env) record.pythonEnv = { lockHash: env.manifest.lockHash, python: env.manifest.python, interpreter: env.manifest.interpreter };
  const [py, gpus, support] = await ev.hostFacts.facts;
  record.host = { py, gpus };
  if (support && !support.ok) {
    throw new HarnessError(`refusing to run submission code unsandboxed: ${support.why}. Install bubblewrap, or pass --unsandboxed (Action input 'unsandboxed') to run it anyway; the result will say it ran unsandboxed.`, "sandbox");
  }
  const pool = opts.pool ?? (await JobPool.create({ gpus: gpus.map((g) => g.index).filter((i) => !opts.gpus || opts.gpus.includes(i)), cores: availableCpus() }));
  const pythonFrom = env && spec.environment ? `the task's environment (${environmentLabel(spec.environment)}, ${env.dir})` : undefined;
  const unmet = unmetRequirements(spec.requires, { pythonFrom, torch: py.torch, cuda: py.cuda, gpus: pool.shape().gpus });
  if (unmet.length) {
    throw new HarnessError(`the runner lacks what task ${spec.id} requires (requires in ${opts.task.file}): ${unmet.join("; ")}. Run it on a runner that has it; no test or probe was run.`, "requires");
  }
  const jobs = planJobs(opts.task, listProbes(opts.task.probesDir, spec.probes.pattern), pool.shape(), { tag: randomBytes(4).toString("hex"), worldSize: opts.worldSize });
  record.officialJob = jobs.official;
  // Its own uid where the engine drops privileges: RLIMIT_NPROC and file ownership are per uid, and
  // every job of this evaluation shares its workspace (sandbox.ts JOB_UID_BASE says why).
  let uid: number | undefined;
  if (support?.ok && support.dropToUid !== null) {
    const claim = claimEvaluationUid();
    record.releaseUid = claim.release;
    uid = evaluationUid(claim.slot);
  }
  // The sandbox binds each GPU's /dev/nvidiaN by the driver's minor number, not its index.
  const gpuNodes = support?.ok && pool.gpus.length > 0 ? await readGpuNodes(pool.gpus) : [];
  const isolation = planIsolation({ support, bwrap: ev.hostFacts.bwrap, interpreterDirs: py.prefixes, evaluationRoot: ws.root, cgroups: ev.cgroups, processes: ev.processes, diskBytes: ev.diskBytes, uid, gpuNodes });
  record.sandboxed = isolation([]).sandbox !== null;
  const runner = new SliceRunner({
    pool,
    t0: ev.clock.t0,
    base: { workspace: ws.dir, root: ws.root, setupDir: ws.setupDir, totalCores: pool.cores.length, isolation, envBin: env ? join(env.dir, "bin") : undefined },
    gpuLimitBytes: spec.limits.gpuMemory,
    onIdleWait: (ms) => ev.clock.addQueued(ms),
  });
  record.runner = runner;
  return { python: py.executable, pool, jobs, runner };
}
