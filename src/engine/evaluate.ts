import type { EvaluationResult } from "../core/result.js";
import type { ProbeCheck } from "../core/probe-outcome.js";
import type { LoadedTask } from "./task-load.js";
import { describeSubmission, type SubmissionSource } from "./submission.js";
import { HarnessError } from "./errors.js";
import { openEvaluation, type EvaluationContext } from "./evaluation-context.js";
import { assembleResult } from "./evaluation-result.js";
import { setUpJobs } from "./evaluation-setup.js";
import type { JobPool } from "./jobs/job-pool.js";
import { officialPhase } from "./official-phase.js";
import { probePhase } from "./probe-phase.js";
import { createWorkspace } from "./workspace.js";

export type Phase = "workspace" | "official" | "probes" | "verdict";

/** Progress of one evaluation, for the CLI's phase lines and the Action's log groups. */
export type EvaluationEvent =
  | { type: "phase-start"; phase: Phase; detail?: string }
  | { type: "phase-end"; phase: Phase; durationS: number; detail?: string }
  | { type: "probe-start"; probe: string; attempt: number; slice?: string }
  | { type: "probe-end"; probe: string; checks: readonly ProbeCheck[] }
  | { type: "log"; source: string; text: string };

export interface EvaluateOptions {
  task: LoadedTask;
  submission: SubmissionSource;
  /**
   * A repository gate's PR base commit (`--pr-base`): required for a task whose base is
   * `{pr: true}`, refused for any other. The submission is then the PR's head, as repo@sha.
   */
  prBase?: string;
  /** Folder of the Python probe kit (`probegate_probe`). */
  kitDir: string;
  python?: string;
  /** Ranks to use; default: the task's GPU count (at least 1). */
  worldSize?: number;
  /** GPUs this evaluation may use (indices); default: every GPU nvidia-smi reports. Ignored with `pool`. */
  gpus?: number[];
  /**
   * The runner's job pool, shared by evaluations run side by side (`probegate eval` with several
   * submissions, the demo); default: a pool of its own over `gpus` and every core of this process.
   */
  pool?: JobPool;
  /** Seed of the probe parameters (task.yml `params`); default: drawn fresh. The result records it. */
  seed?: number;
  /** Run the probes even when the official tests fail. */
  alwaysProbe?: boolean;
  /**
   * Run submission code without the sandbox. Without it, an evaluation on a machine that cannot
   * sandbox (no bubblewrap, no user namespaces) ends in `error` instead of running untrusted code.
   */
  unsandboxed?: boolean;
  /** Per-run limits the task file does not set: processes (threads count too) and disk bytes. */
  runLimits?: { processes?: number; diskBytes?: number };
  signingKey?: string;
  /** The app's evaluation key, recorded in the (signed) result. */
  evaluationKey?: string;
  keepWorkspace?: boolean;
  onEvent?: (e: EvaluationEvent) => void;
  /** Wall clock, injectable for tests. */
  now?: () => Date;
}

/**
 * The workspace phase: the base with the submission applied and the judge's files reset, while the
 * host facts are gathered. It runs outside the harness-error net: without a workspace there is no
 * result to report in, so what it throws (a patch that does not apply, a base that cannot be
 * exported) goes to the caller as it is, and createWorkspace has removed its own folder.
 */
async function workspacePhase(opened: Omit<EvaluationContext, "ws">): Promise<EvaluationContext> {
  const { opts, emit, record, clock } = opened;
  emit({ type: "phase-start", phase: "workspace", detail: describeSubmission(opts.submission) });
  const ws = await createWorkspace(opts.task, opts.submission, opts.prBase);
  // A gate's environment that follows its repository can start only now: the merge base's tree exists.
  opened.hostFacts.followTree?.(ws);
  record.workspaceS = clock.since();
  emit({ type: "phase-end", phase: "workspace", durationS: record.workspaceS, detail: ws.resets.length ? `${ws.resets.length} judge files reset` : undefined });
  return { ...opened, ws };
}

/**
 * One evaluation on this machine: workspace, job setup, official tests, hidden probes, verdict.
 * Bad input throws InputError before any submission code runs; a harness fault in any phase
 * (its name in `error.phase`) ends in a result with verdict `error`, with what the earlier phases
 * recorded. The workspace is removed whatever happens, unless `keepWorkspace`.
 */
export async function evaluate(opts: EvaluateOptions): Promise<EvaluationResult> {
  const ev = await workspacePhase(openEvaluation(opts));
  try {
    const setup = await setUpJobs(ev);
    const official = await officialPhase(ev, setup);
    if (official.passed || opts.alwaysProbe) await probePhase(ev, setup);
  } catch (e) {
    if (!(e instanceof HarnessError)) {
      ev.ws.dispose();
      throw e;
    }
    ev.record.harnessError = { phase: e.phase, message: e.message };
  } finally {
    ev.record.releaseUid?.();
    if (!opts.keepWorkspace) ev.ws.dispose();
  }
  return assembleResult(ev);
}
