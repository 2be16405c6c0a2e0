import { evaluationKey } from "../core/evaluation-key.js";
import {
  PENDING_STATES,
  transition,
  type EvaluationEvent,
  type EvaluationState,
} from "../core/evaluation-state.js";
import type { Verdict } from "../core/result.js";
import type { StoreDb } from "./db.js";

/** What identifies an evaluation, plus what the app knows when it first queues it. */
export interface NewEvaluation {
  owner: string;
  repo: string;
  /** The PR number; null for an evaluation not tied to a PR. */
  pr: number | null;
  headSha: string;
  task: string;
  probeSet: string;
  /** The normalised agent name (agent detection), or null when not an agent PR. */
  agent: string | null;
  /**
   * The PR's base commit when the evaluation was queued (`pull_request.base.sha`; a merge group's
   * `base_sha`): every dispatch sends it, and a repository gate compares the head with it.
   */
  baseSha?: string | null;
}

/** One evaluation row. `version` grows with every change, for optimistic updates. */
export interface EvaluationRecord extends NewEvaluation {
  key: string;
  /** Null only for rows queued before the store kept it (migration 12) and not seen since. */
  baseSha: string | null;
  state: EvaluationState;
  attempt: number;
  checkRunId: number | null;
  workflowRunId: number | null;
  verdict: Verdict | null;
  error: string | null;
  createdAt: Date;
  updatedAt: Date;
  attemptStartedAt: Date;
  version: number;
  /** Until when one app process holds the right to dispatch this queued attempt (null: nobody). */
  claimUntil: Date | null;
  /** A queued attempt over its PR's evaluation budget waits until then (null: not deferred). */
  deferredUntil: Date | null;
}

/** Someone else changed the evaluation between our read and our write; re-read and decide again. */
export class StaleEvaluationError extends Error {
  override readonly name = "StaleEvaluationError";
  constructor(
    readonly key: string,
    readonly expectedVersion: number,
  ) {
    super(`Evaluation ${key} changed since version ${expectedVersion}; re-read it before changing it.`);
  }
}

/** No evaluation has this key. */
export class UnknownEvaluationError extends Error {
  override readonly name = "UnknownEvaluationError";
  constructor(readonly key: string) {
    super(`No evaluation with key ${key} in the store.`);
  }
}

interface Row {
  key: string;
  owner: string;
  repo: string;
  pr: number | null;
  head_sha: string;
  task: string;
  probe_set: string;
  agent: string | null;
  state: EvaluationState;
  attempt: number;
  check_run_id: number | null;
  workflow_run_id: number | null;
  verdict: Verdict | null;
  error: string | null;
  created_at: number;
  updated_at: number;
  attempt_started_at: number;
  version: number;
  claim_until: number | null;
  deferred_until: number | null;
  base_sha: string | null;
}

function fromRow(r: Row): EvaluationRecord {
  return {
    key: r.key,
    owner: r.owner,
    repo: r.repo,
    pr: r.pr,
    headSha: r.head_sha,
    task: r.task,
    probeSet: r.probe_set,
    agent: r.agent,
    state: r.state,
    attempt: r.attempt,
    checkRunId: r.check_run_id,
    workflowRunId: r.workflow_run_id,
    verdict: r.verdict,
    error: r.error,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
    attemptStartedAt: new Date(r.attempt_started_at),
    version: r.version,
    claimUntil: r.claim_until === null ? null : new Date(r.claim_until),
    deferredUntil: r.deferred_until === null ? null : new Date(r.deferred_until),
    baseSha: r.base_sha,
  };
}

/** The evaluation with this key, or null. */
export function getEvaluation(db: StoreDb, key: string): EvaluationRecord | null {
  const row = db.prepare("SELECT * FROM evaluations WHERE key = ?").get(key) as Row | undefined;
  return row ? fromRow(row) : null;
}

/**
 * The evaluation of this (repo, head SHA, task, probe set), created `queued` if there is none.
 * Exactly one row per key even when several processes race: the insert is a no-op on conflict,
 * and `created` is true only for the caller whose insert made the row. The base commit is the one
 * first recorded: a rerun of the head is dispatched against the base it was first evaluated on.
 */
export function insertOrGetEvaluation(db: StoreDb, e: NewEvaluation, now: Date): { evaluation: EvaluationRecord; created: boolean } {
  const key = evaluationKey(e);
  const t = now.getTime();
  const info = db
    .prepare(
      `INSERT INTO evaluations (key, owner, repo, pr, head_sha, task, probe_set, agent, state, created_at, updated_at, attempt_started_at, base_sha)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING`,
    )
    .run(key, e.owner, e.repo, e.pr, e.headSha, e.task, e.probeSet, e.agent, t, t, t, e.baseSha ?? null);
  // A row from before the store kept the base learns it now; a known base is never replaced.
  if (info.changes === 0 && e.baseSha) db.prepare("UPDATE evaluations SET base_sha = ? WHERE key = ? AND base_sha IS NULL").run(e.baseSha, key);
  const evaluation = getEvaluation(db, key);
  if (!evaluation) throw new UnknownEvaluationError(key);
  return { evaluation, created: info.changes === 1 };
}

/** What a transition may record beside the new state. */
export interface TransitionPatch {
  checkRunId?: number;
  workflowRunId?: number;
  /** Required with `complete`: the verdict of the finished attempt. */
  verdict?: Verdict;
  /** Why the attempt ended, with `fail`, `time-out` or `supersede`. */
  error?: string;
  /** With `complete`, for the scorecards: the task's area, the evaluation's wall-clock and GPU seconds. */
  area?: string;
  durationS?: number;
  gpuSeconds?: number;
  /** With `complete`: the probe set the result was judged by (folder hash, evaluator and probes commits run). */
  probeSet?: { hash: string; evaluatorCommit: string | null; probesCommit: string | null };
}

/**
 * Moves an evaluation through the core state machine (an illegal event throws
 * IllegalTransitionError) and records `patch`. The write succeeds only if the row is still the
 * version that was read (or `expectedVersion`, when the caller decided on an older read); else
 * StaleEvaluationError. `complete` also records the attempt's result for first-attempt and
 * best-of-N; `retry` starts the next attempt and clears the last one's run, verdict and error.
 */
export function transitionEvaluation(
  db: StoreDb,
  key: string,
  event: EvaluationEvent,
  opts: { now: Date; expectedVersion?: number; patch?: TransitionPatch },
): EvaluationRecord {
  const apply = db.transaction(() => {
    const current = getEvaluation(db, key);
    if (!current) throw new UnknownEvaluationError(key);
    const expected = opts.expectedVersion ?? current.version;
    if (current.version !== expected) throw new StaleEvaluationError(key, expected);
    const next = transition(current.state, event);
    const patch = opts.patch ?? {};
    if (event === "complete" && !patch.verdict) throw new TypeError(`Completing evaluation ${key} needs the verdict of the attempt.`);
    const t = opts.now.getTime();
    const retry = event === "retry";
    const info = db
      .prepare(
        `UPDATE evaluations SET state = ?, updated_at = ?, version = version + 1,
           attempt = attempt + ?, attempt_started_at = ?,
           check_run_id = COALESCE(?, check_run_id),
           workflow_run_id = CASE WHEN ? THEN NULL ELSE COALESCE(?, workflow_run_id) END,
           verdict = CASE WHEN ? THEN NULL ELSE COALESCE(?, verdict) END,
           error = CASE WHEN ? THEN NULL ELSE COALESCE(?, error) END,
           deferred_until = NULL
         WHERE key = ? AND version = ? AND state = ?`,
      )
      .run(
        next,
        t,
        retry ? 1 : 0,
        retry ? t : current.attemptStartedAt.getTime(),
        patch.checkRunId ?? null,
        retry ? 1 : 0,
        patch.workflowRunId ?? null,
        retry ? 1 : 0,
        patch.verdict ?? null,
        retry ? 1 : 0,
        patch.error ?? null,
        key,
        expected,
        current.state,
      );
    if (info.changes !== 1) throw new StaleEvaluationError(key, expected);
    if (event === "complete" && patch.verdict) {
      db.prepare(
        "INSERT INTO attempt_results (evaluation_key, attempt, verdict, finished_at, area, duration_s, gpu_seconds, probe_set_hash, evaluator_commit, probes_commit) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      ).run(
        key,
        current.attempt,
        patch.verdict,
        t,
        patch.area ?? null,
        patch.durationS ?? null,
        patch.gpuSeconds ?? null,
        patch.probeSet?.hash ?? null,
        patch.probeSet?.evaluatorCommit ?? null,
        patch.probeSet?.probesCommit ?? null,
      );
    }
    const updated = getEvaluation(db, key);
    if (!updated) throw new UnknownEvaluationError(key);
    return updated;
  });
  // IMMEDIATE: take the write lock before reading, so a racing process waits rather than deadlocks.
  return apply.immediate();
}

/** Evaluations whose current attempt has not ended, oldest first: the work to resume after a restart. */
export function listPendingEvaluations(db: StoreDb): EvaluationRecord[] {
  const marks = PENDING_STATES.map(() => "?").join(", ");
  const rows = db.prepare(`SELECT * FROM evaluations WHERE state IN (${marks}) ORDER BY attempt_started_at, key`).all(...PENDING_STATES) as Row[];
  return rows.map(fromRow);
}

/** The evaluation dispatched as this workflow run, for `workflow_run` events. */
export function findEvaluationByWorkflowRun(db: StoreDb, workflowRunId: number): EvaluationRecord | null {
  const row = db.prepare("SELECT * FROM evaluations WHERE workflow_run_id = ? ORDER BY updated_at DESC LIMIT 1").get(workflowRunId) as Row | undefined;
  return row ? fromRow(row) : null;
}

/** The pending evaluations of one PR (of any head but `exceptHead`, when given). */
export function pendingOfPr(db: StoreDb, pr: { owner: string; repo: string; pr: number }, exceptHead?: string): EvaluationRecord[] {
  const marks = PENDING_STATES.map(() => "?").join(", ");
  const head = exceptHead === undefined ? "" : " AND head_sha <> ?";
  const args: unknown[] = [pr.owner, pr.repo, pr.pr, ...(exceptHead === undefined ? [] : [exceptHead]), ...PENDING_STATES];
  const rows = db.prepare(`SELECT * FROM evaluations WHERE owner = ? AND repo = ? AND pr = ?${head} AND state IN (${marks})`).all(...args) as Row[];
  return rows.map(fromRow);
}

/**
 * Takes the right to dispatch a queued attempt that has no run yet, for `leaseMs`: true for exactly
 * one caller among racing app processes (one conditional UPDATE), so no two dispatch the same
 * attempt. A claim whose lease ran out (its process died mid-dispatch) can be taken again.
 */
export function claimDispatch(db: StoreDb, key: string, token: string, now: Date, leaseMs: number): boolean {
  const t = now.getTime();
  const info = db
    .prepare(
      `UPDATE evaluations SET claim_token = ?, claim_until = ?
       WHERE key = ? AND state = 'queued' AND workflow_run_id IS NULL AND (claim_until IS NULL OR claim_until <= ?)`,
    )
    .run(token, t + leaseMs, key, t);
  return info.changes === 1;
}

/** Gives a dispatch claim back (dispatched, failed, or given up); only its holder's token releases it. */
export function releaseClaim(db: StoreDb, key: string, token: string): void {
  db.prepare("UPDATE evaluations SET claim_token = NULL, claim_until = NULL WHERE key = ? AND claim_token = ?").run(key, token);
}
