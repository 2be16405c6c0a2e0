import type { CheckRunOutput } from "./check-run-render.js";
import { isTerminal, type EvaluationState } from "./evaluation-state.js";
import type { Verdict } from "./result.js";

/**
 * The one check run a repository can make required in branch protection (`gate: true` in
 * .github/probegate.yml): on every PR head, it passes when the PR needs no evaluation (a person's
 * PR, no route) or when every evaluation of the head resolved, and fails otherwise. The per-task
 * check runs keep the details; the gate only sums them up.
 */
export const GATE_CHECK_NAME = "probegate / gate";

/** The gate's external_id on a head: one gate per commit. */
export function gateExternalId(headSha: string): string {
  return `gate:${headSha}`;
}

/** One evaluation of the head, as the gate sees it. */
export interface GateEvaluation {
  task: string;
  state: EvaluationState;
  verdict: Verdict | null;
  error: string | null;
}

/** Still waiting (status in_progress), or the final word. */
export type GateDecision = { kind: "pending"; title: string; summary: string } | { kind: "final"; output: CheckRunOutput };

const ICON: Record<string, string> = { resolved: "✅", "probe-rejected": "🚩", "official-failed": "❌", error: "⚠️" };

function row(e: GateEvaluation): string {
  const outcome = e.state === "completed" ? `${ICON[e.verdict ?? "error"] ?? ""} ${e.verdict}` : isTerminal(e.state) ? `${e.state}${e.error ? `: ${e.error.replace(/\|/g, "\\|").slice(0, 200)}` : ""}` : `${e.state}…`;
  return `| \`probegate / ${e.task}\` | ${outcome} |`;
}

function table(evals: ReadonlyArray<GateEvaluation>): string {
  return ["| check | outcome |", "|---|---|", ...evals.map(row)].join("\n");
}

/**
 * The gate of a head from its evaluations. Pending while any is; then `success` only when every
 * evaluation completed `resolved`; `cancelled` when the head's evaluations were superseded or the
 * PR closed; `failure` for anything else (a rejection, an official failure, an evaluation error, a
 * time-out): a gate never passes without a result.
 */
export function decideGate(evals: ReadonlyArray<GateEvaluation>): GateDecision {
  if (evals.length === 0) return { kind: "pending", title: "Waiting for evaluations to start", summary: "" };
  const waiting = evals.filter((e) => !isTerminal(e.state));
  if (waiting.length > 0) {
    return { kind: "pending", title: `Waiting for ${waiting.length} of ${evals.length} evaluation${evals.length > 1 ? "s" : ""}`, summary: table(evals) };
  }
  const ended = evals.filter((e) => e.state === "superseded" || e.state === "cancelled");
  if (ended.length > 0) {
    return { kind: "final", output: { conclusion: "cancelled", title: "Not gated: this head's evaluations were cancelled", summary: table(evals), annotations: [] } };
  }
  const bad = evals.filter((e) => e.state !== "completed" || e.verdict !== "resolved");
  if (bad.length === 0) {
    return { kind: "final", output: { conclusion: "success", title: `All ${evals.length} evaluation${evals.length > 1 ? "s" : ""} resolved`, summary: table(evals), annotations: [] } };
  }
  const names = bad.map((e) => e.task).join(", ");
  return {
    kind: "final",
    output: {
      conclusion: "failure",
      title: `${bad.length} of ${evals.length} evaluation${evals.length > 1 ? "s" : ""} did not resolve: ${names}`.slice(0, 200),
      summary: `${table(evals)}\n\nSee each task's check run for what failed. A rerun (\`/probegate rerun\`) evaluates the head again.`,
      annotations: [],
    },
  };
}

/** The gate of a PR head that needs no evaluation: it passes, and says why. */
export function gateNotNeededOutput(why: string): CheckRunOutput {
  return { conclusion: "success", title: "No evaluation needed", summary: `probegate does not evaluate this pull request: ${why}.`, annotations: [] };
}
