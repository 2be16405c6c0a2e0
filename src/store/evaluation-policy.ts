import type { AgentDetail } from "../core/app-config.js";
import type { StoreDb } from "./db.js";
import type { EvaluationRecord } from "./evaluations.js";
import { getEvaluation } from "./evaluations.js";

/**
 * The repository's rules for one evaluation, fixed when the app queues it (read from
 * `.github/probegate.yml` then), so finishing it needs no second read of the config.
 */
export interface EvaluationPolicy {
  /** Why the repository accepts unsandboxed results (`allowUnsandboxed.reason`); null: refused. */
  allowUnsandboxed: string | null;
  /** What the check run shows of the hidden probes. */
  agentDetail: AgentDetail;
}

/** Rows queued before the policy existed: no unsandboxed results, and the full messages they always had. */
export const LEGACY_POLICY: EvaluationPolicy = { allowUnsandboxed: null, agentDetail: "full" };

/** Records the policy of an evaluation (again on a retry, which may follow a newer config). */
export function setEvaluationPolicy(db: StoreDb, key: string, policy: EvaluationPolicy, runner: string | null): void {
  db.prepare("UPDATE evaluations SET policy = ?, runner = ? WHERE key = ?").run(JSON.stringify(policy), runner, key);
}

/** The policy of an evaluation; LEGACY_POLICY for a row that has none. */
export function getEvaluationPolicy(db: StoreDb, key: string): EvaluationPolicy {
  const r = db.prepare("SELECT policy FROM evaluations WHERE key = ?").get(key) as { policy: string | null } | undefined;
  if (!r?.policy) return LEGACY_POLICY;
  const p = JSON.parse(r.policy) as Partial<EvaluationPolicy>;
  return { allowUnsandboxed: p.allowUnsandboxed ?? null, agentDetail: p.agentDetail ?? "full" };
}

/** The runner label an evaluation was dispatched to (null: the workflow's default). */
export function getRunner(db: StoreDb, key: string): string | null {
  const r = db.prepare("SELECT runner FROM evaluations WHERE key = ?").get(key) as { runner: string | null } | undefined;
  return r?.runner ?? null;
}

/**
 * Puts a queued attempt off until `until` (its PR is over its evaluation budget) and records its
 * waiting check run. Its attempt is counted from `until`, so waiting never times it out.
 */
export function deferEvaluation(db: StoreDb, key: string, until: Date, checkRunId: number): void {
  db.prepare("UPDATE evaluations SET deferred_until = ?, attempt_started_at = ?, check_run_id = ? WHERE key = ? AND state = 'queued' AND workflow_run_id IS NULL").run(
    until.getTime(),
    until.getTime(),
    checkRunId,
    key,
  );
}

/** Records that the evaluation of a PR head started (once per head), for the budget. */
export function recordEvaluationRound(db: StoreDb, at: { owner: string; repo: string; pr: number; headSha: string }, now: Date): void {
  db.prepare("INSERT INTO pr_evaluation_rounds (owner, repo, pr, head_sha, at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING").run(at.owner, at.repo, at.pr, at.headSha, now.getTime());
}

/** Whether this head's evaluation was already counted against the budget. */
export function roundRecorded(db: StoreDb, at: { owner: string; repo: string; pr: number; headSha: string }): boolean {
  return db.prepare("SELECT 1 FROM pr_evaluation_rounds WHERE owner = ? AND repo = ? AND pr = ? AND head_sha = ?").get(at.owner, at.repo, at.pr, at.headSha) !== undefined;
}

/** When the PR's evaluated heads started within `windowMs` before `now`. */
export function recentRounds(db: StoreDb, pr: { owner: string; repo: string; pr: number }, now: Date, windowMs: number): Date[] {
  const rows = db
    .prepare("SELECT at FROM pr_evaluation_rounds WHERE owner = ? AND repo = ? AND pr = ? AND at > ? AND at <= ? ORDER BY at")
    .all(pr.owner, pr.repo, pr.pr, now.getTime() - windowMs, now.getTime()) as Array<{ at: number }>;
  return rows.map((r) => new Date(r.at));
}

/**
 * Dispatched or running evaluations whose run has said nothing for `quietMs` (no state change and
 * no reconciliation since): a `workflow_run` webhook may have been lost, so the sweep asks GitHub.
 */
export function quietRuns(db: StoreDb, now: Date, quietMs: number): EvaluationRecord[] {
  const before = now.getTime() - quietMs;
  const keys = db
    .prepare(
      `SELECT key FROM evaluations WHERE state IN ('dispatched','running') AND workflow_run_id IS NOT NULL
         AND MAX(updated_at, COALESCE(reconciled_at, 0)) <= ? ORDER BY updated_at, key`,
    )
    .all(before) as Array<{ key: string }>;
  return keys.map((k) => getEvaluation(db, k.key)).filter((e): e is EvaluationRecord => e !== null);
}

/** Notes that the sweep asked GitHub about this evaluation's run now. */
export function markReconciled(db: StoreDb, key: string, now: Date): void {
  db.prepare("UPDATE evaluations SET reconciled_at = ? WHERE key = ?").run(now.getTime(), key);
}
