import nock from "nock";
import { describe, expect, it } from "vitest";
import { DISPATCH_LEASE_MS } from "../../src/app/evaluation-runner.js";
import { attemptResults, rerunAttempts } from "../../src/store/reruns.js";
import { claimDispatch, getEvaluation } from "../../src/store/evaluations.js";
import {
  API,
  commentPayload,
  deliver,
  EVALUATOR_REPO,
  HEAD,
  keyFor,
  loadApp,
  mockArtifact,
  mockCheckRunCreate,
  mockCheckRunUpdate,
  mockConfig,
  mockDispatch,
  mockProbeSet,
  mockReply,
  mockStart,
  mockToken,
  mockUntilCheckRun,
  OWNER,
  PR_NUMBER,
  REPO,
  TASK,
  pullRequestPayload,
  resultZip,
  signedResult,
  useAppTests,
  workflowRunPayload,
} from "./app-harness.js";

useAppTests();

/** The example PR closed, merged or not. */
function closedPayload(merged: boolean): Record<string, any> {
  const p = pullRequestPayload("closed");
  p.pull_request.state = "closed";
  p.pull_request.merged = merged;
  p.pull_request.closed_at = "2026-12-02T10:05:00Z";
  return p;
}

describe("closing and reopening a PR", () => {
  it("cancels a pending evaluation when the PR is closed: its evaluator run is cancelled and its check run says why", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 61, runId: 8001 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));

    const cancelRun = nock(API).post(`/repos/${EVALUATOR_REPO}/actions/runs/8001/cancel`).reply(202, {});
    const updated = mockCheckRunUpdate(61);
    await deliver(app, "pull_request", closedPayload(false));
    expect(cancelRun.isDone()).toBe(true);
    expect(updated[0]).toMatchObject({ status: "completed", conclusion: "cancelled", output: { title: "Cancelled: the pull request was closed" } });
    expect(updated[0].output.summary).toContain("Reopening the pull request evaluates its head again");
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "cancelled", error: "the pull request was closed before the evaluation finished" });

    // The cancelled run's own completion arrives later: the evaluation is not brought back by it.
    await deliver(app, "workflow_run", workflowRunPayload(8001, "completed", "cancelled"));
    expect(getEvaluation(app.db, keyFor())?.state).toBe("cancelled");
  });

  it("says 'merged' when the PR was merged, and leaves a finished evaluation alone", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 62, runId: 8002 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    mockArtifact(8002, resultZip(signedResult()));
    mockCheckRunUpdate(62);
    await deliver(app, "workflow_run", workflowRunPayload(8002));
    expect(getEvaluation(app.db, keyFor())?.state).toBe("completed");

    // Nothing pending: closing asks GitHub nothing (every mock must be used, none is set).
    await deliver(app, "pull_request", closedPayload(true));
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "completed", verdict: "probe-rejected" });
  });

  it("words the check run for a merge", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 63, runId: 8003 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    nock(API).post(`/repos/${EVALUATOR_REPO}/actions/runs/8003/cancel`).reply(202, {});
    const updated = mockCheckRunUpdate(63);
    await deliver(app, "pull_request", closedPayload(true));
    expect(updated[0].output).toMatchObject({ title: "Cancelled: the pull request was merged" });
    expect(getEvaluation(app.db, keyFor())?.error).toBe("the pull request was merged before the evaluation finished");
  });

  it("evaluates the head again when the PR is reopened: a new attempt with a new check run, and only it counts", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 64, runId: 8004 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    nock(API).post(`/repos/${EVALUATOR_REPO}/actions/runs/8004/cancel`).reply(202, {});
    mockCheckRunUpdate(64);
    await deliver(app, "pull_request", closedPayload(false));

    // The cancelled check run is completed, so the lookup by external_id finds none pending and makes a new one.
    mockConfig();
    mockProbeSet();
    const created = mockCheckRunCreate({ createId: 65, existing: [{ id: 64, external_id: keyFor(), status: "completed" }] });
    const dispatched = mockDispatch(8005);
    await deliver(app, "pull_request", pullRequestPayload("reopened"));
    expect(created[0]).toMatchObject({ external_id: keyFor(), status: "queued", output: { title: "Queued again (attempt 2)" } });
    expect(dispatched[0].inputs).toMatchObject({ sha: HEAD, "evaluation-key": keyFor() });
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", attempt: 2, checkRunId: 65, workflowRunId: 8005, error: null });

    mockArtifact(8005, resultZip(signedResult()));
    mockCheckRunUpdate(65);
    await deliver(app, "workflow_run", workflowRunPayload(8005));
    // The scorecard counts finished attempts: the cancelled first one is not among them.
    expect(attemptResults(app.db, { owner: OWNER, repo: REPO, pr: PR_NUMBER, task: TASK }).map((a) => a.attempt)).toEqual([2]);
  });
});

describe("a PR closed while its evaluation is being started", () => {
  it("the starting handler cancels the run it just dispatched and completes the check run: one final check run", async () => {
    const app = await loadApp();
    mockUntilCheckRun({ createId: 71 });
    const cancelRun = nock(API).post(`/repos/${EVALUATOR_REPO}/actions/runs/8011/cancel`).reply(202, {});
    const updated = mockCheckRunUpdate(71);
    // GitHub answers the dispatch only after the PR has been closed (the close is handled meanwhile).
    nock(API)
      .post(`/repos/${EVALUATOR_REPO}/actions/workflows/evaluate.yml/dispatches`)
      .reply(async () => {
        await deliver(app, "pull_request", closedPayload(false));
        return [200, { workflow_run_id: 8011, run_url: `${API}/repos/${EVALUATOR_REPO}/actions/runs/8011`, html_url: `https://github.com/${EVALUATOR_REPO}/actions/runs/8011` }];
      });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    expect(cancelRun.isDone()).toBe(true);
    expect(updated).toHaveLength(1);
    expect(updated[0]).toMatchObject({ status: "completed", conclusion: "cancelled", output: { title: "Cancelled while starting" } });
    expect(updated[0].output.summary).toContain("the pull request was closed before the evaluation finished");
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "cancelled", workflowRunId: null, claimUntil: null });
  });
});

describe("reruns of a closed PR", () => {
  it("are refused with a reply that says to reopen it, and recorded", async () => {
    const app = await loadApp();
    mockToken();
    nock(API).get(`/repos/${OWNER}/${REPO}/pulls/${PR_NUMBER}`).reply(200, closedPayload(true).pull_request);
    const replies = mockReply();
    await deliver(app, "issue_comment", commentPayload("/probegate rerun"));
    expect(replies[0].body).toBe("@maintainer: nothing to rerun: this pull request is merged. Reopen it to have its head evaluated again.");
    expect(rerunAttempts(app.db, { owner: OWNER, repo: REPO, pr: PR_NUMBER })).toMatchObject([{ accepted: false, reason: "closed", source: "comment" }]);
  });
});

describe("several app processes on one store", () => {
  it("dispatches a head once when two processes get different events for it at the same time", async () => {
    const a = await loadApp();
    const b = await loadApp({ file: a.file, clock: a.clock });
    // Both plan (each process has its own installation token); only the claim's holder goes on.
    mockUntilCheckRun({ createId: 66 });
    mockToken();
    mockConfig();
    mockProbeSet();
    const dispatched = mockDispatch(8006);
    await Promise.all([deliver(a, "pull_request", pullRequestPayload("opened"), "a-1"), deliver(b, "pull_request", pullRequestPayload("labeled"), "b-1")]);
    expect(dispatched).toHaveLength(1);
    expect(getEvaluation(a.db, keyFor())).toMatchObject({ state: "dispatched", workflowRunId: 8006, attempt: 1, claimUntil: null });
  });

  it("leaves an attempt claimed by a process that died to the sweep, once the claim's lease runs out", async () => {
    const first = await loadApp();
    mockUntilCheckRun({ createId: 67 });
    nock(API).post(`/repos/${EVALUATOR_REPO}/actions/workflows/evaluate.yml/dispatches`).replyWithError("socket hang up");
    await expect(deliver(first, "pull_request", pullRequestPayload("opened"))).rejects.toThrow();
    // As if the process had died holding the claim (a live one gives it back when dispatch throws).
    expect(claimDispatch(first.db, keyFor(), "dead-process", first.clock.now(), DISPATCH_LEASE_MS)).toBe(true);
    first.close();

    // A new process does not take an attempt another one still holds…
    const app = await loadApp({ file: first.file, clock: first.clock });
    await app.probegate.sweep();
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "queued", workflowRunId: null });

    // …and takes it when the lease has run out.
    app.clock.advance(DISPATCH_LEASE_MS / 60_000 + 1);
    mockToken();
    mockCheckRunCreate({ existing: [{ id: 67, external_id: keyFor(), status: "queued" }] });
    // It first looks for a run the dead process may have started (named by the evaluation key): none.
    nock(API).get(`/repos/${EVALUATOR_REPO}/actions/workflows/evaluate.yml/runs`).query(true).reply(200, { total_count: 0, workflow_runs: [] });
    const dispatched = mockDispatch(8007);
    await app.probegate.sweep();
    expect(dispatched).toHaveLength(1);
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", checkRunId: 67, workflowRunId: 8007, claimUntil: null });
  });

  it("adopts the run a process that died had dispatched, found by the evaluation key in its name, instead of dispatching again", async () => {
    const first = await loadApp();
    mockUntilCheckRun({ createId: 68 });
    nock(API).post(`/repos/${EVALUATOR_REPO}/actions/workflows/evaluate.yml/dispatches`).replyWithError("socket hang up");
    await expect(deliver(first, "pull_request", pullRequestPayload("opened"))).rejects.toThrow();
    expect(claimDispatch(first.db, keyFor(), "dead-process", first.clock.now(), DISPATCH_LEASE_MS)).toBe(true);
    first.close();
    const app = await loadApp({ file: first.file, clock: first.clock });
    app.clock.advance(DISPATCH_LEASE_MS / 60_000 + 1);
    mockToken();
    mockCheckRunCreate({ existing: [{ id: 68, external_id: keyFor(), status: "queued" }] });
    nock(API)
      .get(`/repos/${EVALUATOR_REPO}/actions/workflows/evaluate.yml/runs`)
      .query((q) => q.event === "workflow_dispatch" && String(q.created).startsWith(">="))
      .reply(200, {
        total_count: 2,
        workflow_runs: [
          { id: 8100, display_title: "probegate sharded-optimizer someone/else@0000000000000000000000000000000000000000:sharded-optimizer:x", html_url: "https://github.com/x/8100" },
          { id: 8101, display_title: `probegate sharded-optimizer ${keyFor()}`, html_url: "https://github.com/x/8101" },
        ],
      });
    await app.probegate.sweep();
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", checkRunId: 68, workflowRunId: 8101 });
  });
});
