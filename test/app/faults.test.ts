import nock from "nock";
import { describe, expect, it } from "vitest";
import { getEvaluation } from "../../src/store/evaluations.js";
import { rerunAttempts } from "../../src/store/reruns.js";
import { assertValidBody } from "../github/openapi.js";
import {
  API,
  BASE,
  commentPayload,
  deliver,
  useAppTests,
  HEAD,
  keyFor,
  loadApp,
  mockCheckRunCreate,
  mockCheckRunUpdate,
  mockDispatch,
  mockProbeSet,
  mockPullGet,
  mockReaction,
  mockRerunAsk,
  mockStart,
  mockUntilCheckRun,
  mockToken,
  OWNER,
  PR_NUMBER,
  pullRequestPayload,
  REPO,
  workflowRunPayload,
} from "./app-harness.js";

useAppTests();

const checkRuns = `/repos/${OWNER}/${REPO}/check-runs`;
const validCreate = (b: unknown) => assertValidBody("post", "/repos/{owner}/{repo}/check-runs", b);

describe("GitHub faults", () => {
  it("retries a 502 on check-run create after looking the run up again: one check run", async () => {
    const app = await loadApp({ retry: true });
    mockUntilCheckRun();
    const creates: any[] = [];
    nock(API)
      .post(checkRuns, (b) => validCreate(b) && creates.push(b) > 0)
      .reply(502, "Bad Gateway");
    mockCheckRunCreate();
    nock(API)
      .post(checkRuns, (b) => validCreate(b) && creates.push(b) > 0)
      .reply(201, { id: 81 });
    mockDispatch(9101);
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    expect(creates).toHaveLength(2);
    expect(creates[1]).toEqual(creates[0]);
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", checkRunId: 81 });
  });

  it("does not create again when the 502'd create did make the run: the lookup finds it", async () => {
    const app = await loadApp({ retry: true });
    mockUntilCheckRun();
    nock(API).post(checkRuns, validCreate).reply(502, "Bad Gateway");
    mockCheckRunCreate({ existing: [{ id: 80, external_id: keyFor(), status: "queued" }] });
    mockDispatch(9100);
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", checkRunId: 80 });
  });

  it("ends the attempt as an error, with the reason on its check run, when GitHub refuses the dispatch", async () => {
    const app = await loadApp();
    mockUntilCheckRun({ createId: 82 });
    nock(API)
      .post("/repos/octo-org/probegate-evaluator/actions/workflows/evaluate.yml/dispatches", (b) => assertValidBody("post", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", b))
      .reply(500, { message: "Server Error" });
    // The dispatch failure ends the attempt as an error on its check run.
    const updates = mockCheckRunUpdate(82);
    await deliver(app, "pull_request", pullRequestPayload("opened"), "first");
    expect(updates[0]).toMatchObject({ conclusion: "neutral", output: { title: "Could not start the evaluator" } });
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "error" });
  });

  it("waits out a 403 secondary rate limit as retry-after says, then succeeds", async () => {
    const app = await loadApp({ retry: true, throttle: true, retryAfterBaseValue: 50 });
    mockUntilCheckRun();
    const at: number[] = [];
    nock(API)
      .post(checkRuns, (b) => validCreate(b) && at.push(Date.now()) > 0)
      .reply(403, { message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again." }, { "retry-after": "3" })
      .post(checkRuns, (b) => validCreate(b) && at.push(Date.now()) > 0)
      .reply(201, { id: 83 });
    mockDispatch(9103);
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    expect(at).toHaveLength(2);
    // retry-after 3 × 50 ms per unit in this test (1000 ms per unit in production).
    expect((at[1] as number) - (at[0] as number)).toBeGreaterThanOrEqual(150);
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", checkRunId: 83 });
  });

  it("forgets a delivery whose handling failed, so GitHub's redelivery is acted on", async () => {
    const app = await loadApp();
    mockToken();
    nock(API).get(`/repos/${OWNER}/${REPO}/contents/.github%2Fprobegate.yml`).query(true).reply(500, { message: "Server Error" });
    await expect(deliver(app, "pull_request", pullRequestPayload("opened"), "flaky")).rejects.toThrow();
    mockStart({ checkRunId: 84, runId: 9104, token: false });
    await deliver(app, "pull_request", pullRequestPayload("opened"), "flaky");
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", workflowRunId: 9104 });
  });
});

describe("deadlines", () => {
  it("times out an evaluation past its deadline (injected clock), says so on its check run, and lets a rerun retry it", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 85, runId: 9105 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    app.clock.advance(29);
    expect(await app.probegate.sweep()).toBe(0);
    app.clock.advance(2);
    nock(API).post("/repos/octo-org/probegate-evaluator/actions/runs/9105/cancel").reply(202, {});
    const updates = mockCheckRunUpdate(85);
    expect(await app.probegate.sweep()).toBe(1);
    expect(updates[0]).toMatchObject({ conclusion: "timed_out", actions: [{ identifier: "rerun" }], output: { title: "Evaluation timed out" } });
    expect(getEvaluation(app.db, keyFor())?.state).toBe("timed-out");

    // A late result for the timed-out run is not taken.
    await deliver(app, "workflow_run", workflowRunPayload(9105));
    expect(getEvaluation(app.db, keyFor())?.state).toBe("timed-out");

    mockRerunAsk("maintainer", "write");
    mockReaction(5);
    mockProbeSet();
    mockCheckRunCreate({ createId: 86, existing: [{ id: 85, external_id: keyFor(), status: "completed" }] });
    mockDispatch(9106);
    await deliver(app, "issue_comment", commentPayload("/probegate rerun sharded-optimizer", { commentId: 5 }));
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", attempt: 2, workflowRunId: 9106 });
    expect(rerunAttempts(app.db, { owner: OWNER, repo: REPO, pr: PR_NUMBER })[0]).toMatchObject({ task: "sharded-optimizer", accepted: true });
  });

  it("sweeps on events too, not only on the timer", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 87, runId: 9107 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    app.clock.advance(45);
    nock(API).post("/repos/octo-org/probegate-evaluator/actions/runs/9107/cancel").reply(409, { message: "Cannot cancel a workflow run that is completed." });
    mockCheckRunUpdate(87);
    await deliver(app, "workflow_run", workflowRunPayload(31337, "in_progress"));
    expect(getEvaluation(app.db, keyFor())?.state).toBe("timed-out");
  });
});

describe("restarts", () => {
  it("resumes an evaluation a crash left queued (check run made, never dispatched) when the app loads again", async () => {
    const first = await loadApp();
    mockUntilCheckRun({ createId: 88 });
    nock(API)
      .post("/repos/octo-org/probegate-evaluator/actions/workflows/evaluate.yml/dispatches", (b) => assertValidBody("post", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", b))
      .replyWithError("socket hang up");
    await expect(deliver(first, "pull_request", pullRequestPayload("opened"))).rejects.toThrow();
    first.close();

    // The failed dispatch was a network error, not an answer: the row is still queued.
    mockToken();
    mockCheckRunCreate({ existing: [{ id: 88, external_id: keyFor(), status: "queued" }] });
    const dispatched = mockDispatch(9108);
    const app = await loadApp({ file: first.file });
    expect(dispatched[0].inputs).toMatchObject({ sha: HEAD, "base-sha": BASE, "evaluation-key": keyFor() });
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", checkRunId: 88, workflowRunId: 9108 });
  });

  it("resumes a queued evaluation from before the store kept the PR's base: asks GitHub for the PR's base and sends it", async () => {
    const first = await loadApp();
    mockUntilCheckRun({ createId: 89 });
    nock(API)
      .post("/repos/octo-org/probegate-evaluator/actions/workflows/evaluate.yml/dispatches", (b) => assertValidBody("post", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", b))
      .replyWithError("socket hang up");
    await expect(deliver(first, "pull_request", pullRequestPayload("opened"))).rejects.toThrow();
    // As a row queued by a version before migration 12 looks.
    first.db.prepare("UPDATE evaluations SET base_sha = NULL").run();
    first.close();

    const moved = "5".repeat(40);
    mockToken();
    mockPullGet(HEAD, moved);
    mockCheckRunCreate({ existing: [{ id: 89, external_id: keyFor(), status: "queued" }] });
    const dispatched = mockDispatch(9109);
    const app = await loadApp({ file: first.file });
    expect(dispatched[0].inputs).toMatchObject({ sha: HEAD, "base-sha": moved });
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", workflowRunId: 9109, baseSha: moved });
  });
});
