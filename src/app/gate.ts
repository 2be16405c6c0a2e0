import { decideGate, GATE_CHECK_NAME, gateExternalId, gateNotNeededOutput } from "../core/gate-check.js";
import { completeCheckRun, ensureCheckRun } from "../github/check-runs.js";
import type { GitHubClient, RepoRef } from "../github/client.js";
import type { EvaluationRecord } from "../store/evaluations.js";
import { commitTree } from "../github/merge-group.js";
import { concludeGate, evaluationsAtHead, getGate, openGateRecord, recordGateOutcome } from "../store/gates.js";
import { fullyAccepted } from "../store/acceptances.js";
import type { AppDeps } from "./deps.js";

/** The newest evaluation of each task (an evaluator ref change makes a new key for the same task). */
function latestPerTask(evals: ReadonlyArray<EvaluationRecord>): EvaluationRecord[] {
  const byTask = new Map<string, EvaluationRecord>();
  for (const e of evals) {
    const seen = byTask.get(e.task);
    if (!seen || e.updatedAt > seen.updatedAt) byTask.set(e.task, e);
  }
  return [...byTask.values()].sort((a, b) => a.task.localeCompare(b.task));
}

/**
 * Opens the head's gate check run (or finds the open one by external_id) as evaluations start, then
 * brings it up to date: a head whose evaluations all ended already (a redelivery) concludes at once.
 */
export async function openGate(gh: GitHubClient, deps: AppDeps, repo: RepoRef, pr: number, headSha: string): Promise<void> {
  const check = await ensureCheckRun(
    gh,
    { ...repo, name: GATE_CHECK_NAME, headSha, externalId: gateExternalId(headSha) },
    { status: "in_progress", title: "Waiting for evaluations", summary: "The per-task `probegate / …` check runs are in progress; this check sums them up." },
    { pendingOnly: true },
  );
  const open = getGate(deps.db, { ...repo, headSha });
  if (!open || open.checkRunId !== check.id || open.concluded) openGateRecord(deps.db, { ...repo, headSha, pr, checkRunId: check.id });
  await refreshGate(gh, deps, { ...repo, headSha });
}

/**
 * Posts the head's gate conclusion once every evaluation of it has ended; does nothing while any is
 * pending, or where the repository has no gate. Called after every evaluation of a head ends. A
 * passed gate keeps its head's tree, so a merge group holding exactly that tree passes on it.
 */
export async function refreshGate(gh: GitHubClient, deps: AppDeps, at: RepoRef & { headSha: string }): Promise<void> {
  const gate = getGate(deps.db, at);
  if (!gate || gate.concluded) return;
  const decision = decideGate(effectiveVerdicts(deps, latestPerTask(evaluationsAtHead(deps.db, { ...at, pr: gate.pr }))));
  if (decision.kind === "pending") return;
  if (!concludeGate(deps.db, { ...at, checkRunId: gate.checkRunId })) return;
  await completeCheckRun(gh, { owner: at.owner, repo: at.repo, checkRunId: gate.checkRunId }, decision.output);
  const tree = decision.output.conclusion === "success" ? await commitTree(gh, { owner: at.owner, repo: at.repo }, at.headSha) : null;
  recordGateOutcome(deps.db, at, decision.output.conclusion, tree);
}

/** An evaluation every failed check of which a person accepted counts as resolved at the gate (its signed verdict stays). */
function effectiveVerdicts(deps: AppDeps, evals: EvaluationRecord[]): EvaluationRecord[] {
  return evals.map((e) => (fullyAccepted(deps.db, e) ? { ...e, verdict: "resolved" as const } : e));
}

/**
 * Decides a head's gate again after an acceptance: a gate already concluded is posted anew with the
 * accepted evaluations counted as resolved; one still open concludes as usual once all have ended.
 */
export async function reconcludeGate(gh: GitHubClient, deps: AppDeps, at: RepoRef & { headSha: string }): Promise<void> {
  const gate = getGate(deps.db, at);
  if (!gate) return;
  if (!gate.concluded) return refreshGate(gh, deps, at);
  const decision = decideGate(effectiveVerdicts(deps, latestPerTask(evaluationsAtHead(deps.db, { ...at, pr: gate.pr }))));
  if (decision.kind === "pending") return;
  await completeCheckRun(gh, { owner: at.owner, repo: at.repo, checkRunId: gate.checkRunId }, decision.output);
  const tree = decision.output.conclusion === "success" ? await commitTree(gh, { owner: at.owner, repo: at.repo }, at.headSha) : null;
  recordGateOutcome(deps.db, at, decision.output.conclusion, tree);
}

/** The gate of a head that needs no evaluation (a person's PR, no route): it passes, saying why. */
export async function passGate(gh: GitHubClient, repo: RepoRef, headSha: string, why: string): Promise<void> {
  const check = await ensureCheckRun(gh, { ...repo, name: GATE_CHECK_NAME, headSha, externalId: gateExternalId(headSha) }, { status: "in_progress", title: "Deciding", summary: "" });
  if (check.created) await completeCheckRun(gh, { ...repo, checkRunId: check.id }, gateNotNeededOutput(why));
}
