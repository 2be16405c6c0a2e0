import type { CheckAnnotation, CheckRunOutput } from "./check-run-render.js";

/** The check-run button that asks for a rerun (GitHub caps label 20, description 40, identifier 20 characters). */
export const RERUN_ACTION = { label: "Re-run probes", description: "Evaluate the PR's current head again", identifier: "rerun" } as const;

/** The check run's name for one task or probe suite, so each target of a PR shows on its own. */
export function checkRunName(task: string): string {
  return `probegate / ${task}`;
}

/** The name of the check run that reports a broken `.github/probegate.yml`. */
export const CONFIG_CHECK_NAME = "probegate / config";

/** Title and summary of a check run that waits for its evaluator run. */
export function queuedOutput(t: { task: string; why: ReadonlyArray<string>; agent: string; evaluator: string; attempt: number }): { title: string; summary: string } {
  return {
    title: t.attempt > 1 ? `Queued again (attempt ${t.attempt})` : "Queued for official tests and hidden probes",
    summary: [
      `Evaluating \`${t.task}\` for the pull request by **${t.agent}**, on the evaluator \`${t.evaluator}\`.`,
      "",
      `Chosen because: ${t.why.join("; ")}.`,
    ].join("\n"),
  };
}

const noAnnotations = (conclusion: CheckRunOutput["conclusion"], title: string, summary: string): CheckRunOutput => ({ conclusion, title, summary, annotations: [] });

/** A newer push took this evaluation's place. */
export function supersededOutput(newHeadSha: string): CheckRunOutput {
  return noAnnotations(
    "cancelled",
    `Superseded by ${newHeadSha.slice(0, 7)}`,
    `A newer push (\`${newHeadSha}\`) replaced this commit as the pull request's head; its evaluator run was cancelled and the new head is evaluated instead.`,
  );
}

/** The PR was closed (merged or not) while this evaluation was pending. */
export function closedOutput(merged: boolean): CheckRunOutput {
  return noAnnotations(
    "cancelled",
    merged ? "Cancelled: the pull request was merged" : "Cancelled: the pull request was closed",
    merged
      ? "The pull request was merged before the evaluation finished, so its evaluator run was cancelled. The merge was not gated by this result."
      : "The pull request was closed before the evaluation finished, so its evaluator run was cancelled. Reopening the pull request evaluates its head again.",
  );
}

/** The attempt ended (closed PR, newer push) while the app was still starting it. */
export function endedWhileStartingOutput(why: string, runCancelled: boolean): CheckRunOutput {
  return noAnnotations(
    "cancelled",
    "Cancelled while starting",
    `This evaluation was ended while it was being started: ${why}.${runCancelled ? " The evaluator run that had just been dispatched was cancelled." : " No evaluator run was started."}`,
  );
}

/** The attempt produced no result before its deadline. */
export function timedOutOutput(why: string): CheckRunOutput {
  return noAnnotations(
    "timed_out",
    "Evaluation timed out",
    `No result arrived in time: ${why}. The runner may have died or the queue may be full. Press **${RERUN_ACTION.label}** or comment \`/probegate rerun\` to try again.`,
  );
}

/**
 * The evaluator's result could not be trusted or was never made. Neutral, never success: a forged
 * or broken result says nothing about the submission.
 */
export function noResultOutput(title: string, problems: ReadonlyArray<string>): CheckRunOutput {
  return noAnnotations(
    "neutral",
    title,
    [
      "probegate could not judge this commit, so this check neither passes nor fails it.",
      "",
      ...problems.map((p) => `- ${p}`),
      "",
      `Press **${RERUN_ACTION.label}** or comment \`/probegate rerun\` to try again.`,
    ].join("\n"),
  );
}

/** One problem in `.github/probegate.yml`: the field (dotted path), the line where known, and what is wrong. */
export interface ConfigIssue {
  field: string;
  line: number | null;
  message: string;
}

/** A broken `.github/probegate.yml`: failure, with each problem in the summary and on its line. */
export function configErrorOutput(file: string, ref: string, issues: ReadonlyArray<ConfigIssue>): CheckRunOutput {
  const rows = issues.map((i) => `- \`${file}${i.line ? `:${i.line}` : ""}\` — \`${i.field}\`: ${i.message}`);
  const annotations: CheckAnnotation[] = issues.map((i) => ({
    path: file,
    start_line: i.line ?? 1,
    end_line: i.line ?? 1,
    annotation_level: "failure",
    title: `probegate config: ${i.field}`.slice(0, 255),
    message: i.message,
  }));
  return {
    conclusion: "failure",
    title: `${file} is invalid (${issues.length} problem${issues.length === 1 ? "" : "s"})`,
    summary: [
      `probegate read \`${file}\` from \`${ref}\` and cannot use it, so nothing was evaluated. Fix it on the default branch; the schema is \`schema/app-config.schema.json\`.`,
      "",
      ...rows,
    ].join("\n"),
    annotations,
  };
}
