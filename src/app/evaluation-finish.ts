import { noResultOutput, RERUN_ACTION } from "../core/app-check-outputs.js";
import { judgeSandbox, withBanner } from "../core/app-policy/sandbox-policy.js";
import { readWithQuarantine } from "../core/quarantine.js";
import { renderCheckRunWithQuarantine } from "../core/quarantine-check-run.js";
import type { EvaluationResult } from "../core/result.js";
import { completeCheckRun } from "../github/check-runs.js";
import type { GitHubClient } from "../github/client.js";
import { getDispatchContext, recordProbeFailures } from "../store/dispatch-context.js";
import { getEvaluationPolicy } from "../store/evaluation-policy.js";
import { transitionEvaluation, type EvaluationRecord } from "../store/evaluations.js";
import { checkOutputPosted, queueCheckOutput } from "../store/check-run-outbox.js";
import type { CheckRunOutput } from "../core/check-run-render.js";
import { quarantinedChecksOf } from "../store/probe-health.js";
import type { AppDeps } from "./deps.js";
import { refreshGate } from "./gate.js";

/**
 * Reports a verified result: the verdict's conclusion, summary, annotations and the rerun button.
 * A result made without the sandbox is refused (neutral, `error`) unless the repository opted in,
 * and then says so at the top. Checks the store has quarantined for the result's probe set are
 * read as warnings; the verdict kept (and so the gate and the scorecard) is that reading, the
 * signed result stays as it came. What the check run shows of the probes follows the policy's
 * detail level; the store keeps every failed check's message for maintainers either way.
 */
export async function finishWithResult(gh: GitHubClient, deps: AppDeps, e: EvaluationRecord, result: EvaluationResult): Promise<void> {
  const policy = getEvaluationPolicy(deps.db, e.key);
  const sandbox = judgeSandbox(result, policy.allowUnsandboxed);
  if (sandbox.kind === "refused") {
    deps.log.warn({ key: e.key }, `refused the unsandboxed result of evaluation ${e.key} (it said ${result.verdict})`);
    await finishWithoutResult(gh, deps, e, sandbox.title, sandbox.problems);
    return;
  }
  const quarantined = quarantinedChecksOf(deps.db, { task: result.task.id, probeSet: result.task.probeSet });
  const rendered = renderCheckRunWithQuarantine(result, quarantined, policy.agentDetail);
  const output = sandbox.kind === "allowed" ? withBanner(rendered.output, sandbox.banner) : rendered.output;
  const url = getDispatchContext(deps.db, e.key)?.runUrl ?? undefined;
  const extra = { actions: [RERUN_ACTION], ...(url ? { detailsUrl: url } : {}) };
  const done = endAndQueue(deps, e, output, extra, () => transitionEvaluation(deps.db, e.key, "complete", {
    now: deps.now(),
    expectedVersion: e.version,
    patch: {
      verdict: rendered.verdict,
      area: result.task.area,
      durationS: result.durations.totalS,
      gpuSeconds: result.gpuSeconds,
      probeSet: { hash: result.task.probeSet, evaluatorCommit: result.probeSetVersion?.evaluatorCommit ?? null, probesCommit: result.probeSetVersion?.probesCommit ?? null },
    },
  }));
  // A quarantined check's failure is a warning on the check run, so it is no rejection category in
  // the scorecard either. It is left out (probe_failures holds failures and errors only), which
  // also keeps it out of `/probegate explain`, as it is out of the check run's failures.
  const setAside = new Set(readWithQuarantine(result, quarantined).warnings.map((w) => w.probe));
  recordProbeFailures(deps.db, e.key, e.attempt, result.probes.filter((p) => !setAside.has(p)));
  await postQueued(gh, deps, done, output, extra);
  await refreshGate(gh, deps, { owner: e.owner, repo: e.repo, headSha: e.headSha });
}

/** Ends the attempt (`end`) and queues its final check-run output in one transaction. */
function endAndQueue(deps: AppDeps, e: EvaluationRecord, output: CheckRunOutput, extra: CheckExtra, end: () => EvaluationRecord): EvaluationRecord {
  return deps.db.transaction(() => {
    const done = end();
    if (done.checkRunId !== null) queueCheckOutput(deps.db, { key: e.key, owner: e.owner, repo: e.repo, checkRunId: done.checkRunId, output, extra }, deps.now());
    return done;
  })();
}

/** Posts the queued final output and forgets it. */
async function postQueued(gh: GitHubClient, deps: AppDeps, done: EvaluationRecord, output: CheckRunOutput, extra: CheckExtra): Promise<void> {
  if (done.checkRunId === null) return;
  await completeCheckRun(gh, { owner: done.owner, repo: done.repo, checkRunId: done.checkRunId }, output, extra);
  checkOutputPosted(deps.db, done.key, done.checkRunId);
}

type CheckExtra = { detailsUrl?: string; actions?: Array<{ label: string; description: string; identifier: string }> };

/** Ends an attempt without a usable result (`error`); its check run says why and is never a success. */
export async function finishWithoutResult(gh: GitHubClient, deps: AppDeps, e: EvaluationRecord, title: string, problems: string[]): Promise<void> {
  const output = noResultOutput(title, problems);
  const extra = { actions: [RERUN_ACTION] };
  const done = endAndQueue(deps, e, output, extra, () => transitionEvaluation(deps.db, e.key, "fail", { now: deps.now(), expectedVersion: e.version, patch: { error: `${title}: ${problems.join("; ")}` } }));
  await postQueued(gh, deps, done, output, extra);
  await refreshGate(gh, deps, { owner: e.owner, repo: e.repo, headSha: e.headSha });
}
