import { batchAnnotations, type CheckRunOutput } from "../core/check-run-render.js";
import type { GitHubClient, RepoRef } from "./client.js";

export interface CheckRunTarget extends RepoRef {
  name: string;
  headSha: string;
  /** The evaluation key: lets a retry find the run it already created. */
  externalId: string;
}

/**
 * The check run for this evaluation key on this commit, if one exists; with `pendingOnly`, only
 * one not yet completed (a rerun of the key gets a new check run beside the finished one).
 */
export async function findCheckRun(gh: GitHubClient, t: CheckRunTarget, pendingOnly = false): Promise<{ id: number; status: string } | null> {
  const runs = await gh.paginate(gh.rest.checks.listForRef, { owner: t.owner, repo: t.repo, ref: t.headSha, check_name: t.name, filter: "all", per_page: 100 });
  const hit = runs.find((r) => r.external_id === t.externalId && (!pendingOnly || r.status !== "completed"));
  return hit ? { id: hit.id, status: hit.status } : null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether a failed create may have reached GitHub: a 5xx or no answer at all (a 4xx is a real refusal). */
function mayRetryCreate(e: unknown): boolean {
  const { status, response } = e as { status?: number; response?: unknown };
  // Octokit reports a network failure as status 500 without a response.
  return response === undefined || status === undefined || status >= 500;
}

/**
 * Creates the check run, or returns the one this evaluation key already has: a redelivered event
 * finds the run it made. A create that fails with a 5xx or no answer is not blindly retried (it
 * may have been made before the error): the run is looked up by external_id again first, so a
 * retried create never makes a second check run. With `pendingOnly`, a completed run of the key
 * (an earlier attempt) does not count.
 */
export async function ensureCheckRun(
  gh: GitHubClient,
  t: CheckRunTarget,
  init: { status: "queued" | "in_progress"; title: string; summary: string; detailsUrl?: string },
  opts: { pendingOnly?: boolean; attempts?: number; backoffMs?: number } = {},
): Promise<{ id: number; created: boolean }> {
  const attempts = Math.max(1, opts.attempts ?? 3);
  for (let attempt = 1; ; attempt++) {
    const existing = await findCheckRun(gh, t, opts.pendingOnly ?? false);
    if (existing) return { id: existing.id, created: false };
    try {
      const { data } = await gh.rest.checks.create({
        owner: t.owner,
        repo: t.repo,
        name: t.name,
        head_sha: t.headSha,
        external_id: t.externalId,
        status: init.status,
        ...(init.status === "in_progress" ? { started_at: new Date().toISOString() } : {}),
        ...(init.detailsUrl ? { details_url: init.detailsUrl } : {}),
        output: { title: init.title, summary: init.summary },
        // Octokit's own retry would repeat the POST without looking first.
        request: { retries: 0 },
      });
      return { id: data.id, created: true };
    } catch (e) {
      if (attempt >= attempts || !mayRetryCreate(e)) throw e;
      await sleep((opts.backoffMs ?? 250) * attempt * attempt);
    }
  }
}

/**
 * Completes a check run with its conclusion, title, summary and annotations. The Checks API takes
 * at most 50 annotations a request and appends those of each update, so the first request sets
 * the conclusion with the first batch and each further batch goes in its own update.
 */
export async function completeCheckRun(
  gh: GitHubClient,
  target: RepoRef & { checkRunId: number },
  out: CheckRunOutput,
  extra: { detailsUrl?: string; actions?: Array<{ label: string; description: string; identifier: string }> } = {},
): Promise<number> {
  const batches = batchAnnotations(out.annotations);
  const base = { owner: target.owner, repo: target.repo, check_run_id: target.checkRunId };
  const output = (i: number) => ({ title: out.title, summary: out.summary, ...(batches[i]?.length ? { annotations: batches[i] } : {}) });
  await gh.rest.checks.update({
    ...base,
    status: "completed",
    conclusion: out.conclusion,
    completed_at: new Date().toISOString(),
    ...(extra.detailsUrl ? { details_url: extra.detailsUrl } : {}),
    ...(extra.actions?.length ? { actions: extra.actions } : {}),
    output: output(0),
  });
  for (let i = 1; i < batches.length; i++) await gh.rest.checks.update({ ...base, output: output(i) });
  return Math.max(1, batches.length);
}
