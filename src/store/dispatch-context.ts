import type { Category } from "../core/probe-check.js";
import type { ProbeResult } from "../core/result.js";
import type { StoreDb } from "./db.js";
import { markTimedOut } from "./evaluation-endings.js";
import {
  getEvaluation,
  type EvaluationRecord,
} from "./evaluations.js";

/**
 * Where and how an evaluation runs, as the app decided when it queued it: the installation whose
 * token reaches the PR's repository (a `workflow_run` event comes from the evaluator's), the
 * evaluator workflow, and the deadline after which the attempt is timed out.
 */
export interface DispatchContext {
  installationId: number;
  evaluatorRepo: string;
  workflow: string;
  ref: string;
  deadlineS: number;
  /** The evaluator run's page, once dispatched. */
  runUrl: string | null;
}

/** Records the dispatch context of an evaluation (again, for a retry that may use a newer config). */
export function setDispatchContext(db: StoreDb, key: string, c: Omit<DispatchContext, "runUrl">): void {
  db.prepare(
    "UPDATE evaluations SET installation_id = ?, evaluator_repo = ?, evaluator_workflow = ?, evaluator_ref = ?, deadline_s = ?, run_url = NULL WHERE key = ?",
  ).run(c.installationId, c.evaluatorRepo, c.workflow, c.ref, Math.round(c.deadlineS), key);
}

/** Records the page of the evaluator run an attempt was dispatched as. */
export function setRunUrl(db: StoreDb, key: string, url: string): void {
  db.prepare("UPDATE evaluations SET run_url = ? WHERE key = ?").run(url, key);
}

/** The dispatch context of an evaluation; null when the app never recorded one (a row from before migration 2). */
export function getDispatchContext(db: StoreDb, key: string): DispatchContext | null {
  const r = db
    .prepare("SELECT installation_id, evaluator_repo, evaluator_workflow, evaluator_ref, deadline_s, run_url FROM evaluations WHERE key = ?")
    .get(key) as
    | { installation_id: number | null; evaluator_repo: string | null; evaluator_workflow: string | null; evaluator_ref: string | null; deadline_s: number | null; run_url: string | null }
    | undefined;
  if (!r || r.installation_id === null || !r.evaluator_repo || !r.evaluator_workflow || !r.evaluator_ref || r.deadline_s === null) return null;
  return { installationId: r.installation_id, evaluatorRepo: r.evaluator_repo, workflow: r.evaluator_workflow, ref: r.evaluator_ref, deadlineS: r.deadline_s, runUrl: r.run_url };
}

/**
 * Times out every pending evaluation whose attempt began more than its own deadline ago (or
 * `defaultDeadlineS`, for rows without one) and returns them.
 */
export function timeOutOverdue(db: StoreDb, now: Date, defaultDeadlineS: number): EvaluationRecord[] {
  return markTimedOut(db, now, (e) => getDispatchContext(db, e.key)?.deadlineS ?? defaultDeadlineS);
}

/** Every evaluation of one PR, newest first. */
export function evaluationsOfPr(db: StoreDb, pr: { owner: string; repo: string; pr: number }): EvaluationRecord[] {
  const keys = db
    .prepare("SELECT key FROM evaluations WHERE owner = ? AND repo = ? AND pr = ? ORDER BY updated_at DESC, key")
    .all(pr.owner, pr.repo, pr.pr) as Array<{ key: string }>;
  return keys.map((k) => getEvaluation(db, k.key)).filter((e): e is EvaluationRecord => e !== null);
}

/** The PRs of a repository with an evaluation of this head SHA, in ascending order. */
export function prsEvaluatedAtHead(db: StoreDb, head: { owner: string; repo: string; headSha: string }): number[] {
  const rows = db
    .prepare("SELECT DISTINCT pr FROM evaluations WHERE owner = ? AND repo = ? AND head_sha = ? AND pr IS NOT NULL ORDER BY pr")
    .all(head.owner, head.repo, head.headSha) as Array<{ pr: number }>;
  return rows.map((r) => r.pr);
}

/** One probe check that did not pass, as kept for `/probegate explain` (never the probe's source). */
export interface ProbeFailure {
  probeId: string;
  category: Category;
  status: "failed" | "error";
  message: string;
}

/** Keeps the failed and errored checks of a finished attempt. */
export function recordProbeFailures(db: StoreDb, key: string, attempt: number, probes: ReadonlyArray<ProbeResult>): void {
  const insert = db.prepare(
    "INSERT INTO probe_failures (evaluation_key, attempt, probe_id, category, status, message) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
  );
  db.transaction(() => {
    for (const p of probes) if (p.status === "failed" || p.status === "error") insert.run(key, attempt, p.id, p.category, p.status, p.message);
  })();
}

/** The failed checks of an evaluation's attempt. */
export function probeFailures(db: StoreDb, key: string, attempt: number): ProbeFailure[] {
  const rows = db
    .prepare("SELECT probe_id, category, status, message FROM probe_failures WHERE evaluation_key = ? AND attempt = ? ORDER BY category, probe_id")
    .all(key, attempt) as Array<{ probe_id: string; category: Category; status: "failed" | "error"; message: string }>;
  return rows.map((r) => ({ probeId: r.probe_id, category: r.category, status: r.status, message: r.message }));
}
