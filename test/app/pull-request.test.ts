import nock from "nock";
import { describe, expect, it } from "vitest";
import { deliveriesFor } from "../../src/store/deliveries.js";
import { getEvaluation, listPendingEvaluations } from "../../src/store/evaluations.js";
import {
  API,
  BASE,
  deliver,
  useAppTests,
  HEAD,
  keyFor,
  loadApp,
  mockCheckRunCreate,
  mockCheckRunUpdate,
  mockCommits,
  mockConfig,
  mockDispatch,
  mockProbeSet,
  mockStart,
  mockToken,
  OWNER,
  PR_NUMBER,
  pullRequestPayload,
  REPO,
} from "./app-harness.js";

useAppTests();

describe("pull_request events", () => {
  it("queues a check run keyed by the evaluation key and dispatches the evaluator with run details", async () => {
    const app = await loadApp();
    const { created, dispatched } = mockStart({ checkRunId: 41, runId: 7001 });
    await deliver(app, "pull_request", pullRequestPayload("opened"), "d-open");
    expect(created[0]).toMatchObject({ name: "probegate / sharded-optimizer", head_sha: HEAD, external_id: keyFor(), status: "queued" });
    expect(created[0].output.summary).toContain('label "bug"');
    expect(dispatched[0]).toEqual({
      ref: "main",
      return_run_details: true,
      inputs: { repository: `${OWNER}/${REPO}`, sha: HEAD, "base-sha": BASE, task: "sharded-optimizer", "evaluation-key": keyFor() },
    });
    const e = getEvaluation(app.db, keyFor());
    expect(e).toMatchObject({ state: "dispatched", checkRunId: 41, workflowRunId: 7001, agent: "copilot", pr: PR_NUMBER, baseSha: BASE });
    expect(deliveriesFor(app.db, keyFor()).map((d) => d.id)).toEqual(["d-open"]);
  });

  it.each(["synchronize", "reopened", "ready_for_review", "labeled"])("starts an evaluation on %s too", async (action) => {
    const app = await loadApp();
    mockStart({ checkRunId: 42, runId: 7002 });
    await deliver(app, "pull_request", pullRequestPayload(action));
    expect(getEvaluation(app.db, keyFor())?.state).toBe("dispatched");
  });

  it("does nothing for a PR no agent wrote (author, commits, branch and labels say so)", async () => {
    const app = await loadApp();
    mockToken();
    mockConfig();
    mockCommits("Fix the README\n\nSigned-off-by: Codertocat <21031067+Codertocat@users.noreply.github.com>");
    await deliver(app, "pull_request", pullRequestPayload("opened", { author: "Codertocat" }));
    expect(listPendingEvaluations(app.db)).toEqual([]);
  });

  it("detects an agent from a Co-authored-by trailer in the PR's commits", async () => {
    const app = await loadApp();
    mockToken();
    mockConfig();
    mockCommits("Shard the optimizer state", "Shard the optimizer state\n\nCo-authored-by: Claude <noreply@anthropic.com>");
    mockProbeSet();
    mockCheckRunCreate({ createId: 43 });
    mockDispatch(7003);
    await deliver(app, "pull_request", pullRequestPayload("opened", { author: "Codertocat" }));
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", agent: "claude" });
  });

  it("does nothing when the repository has no .github/probegate.yml, or for a draft", async () => {
    const app = await loadApp();
    mockToken();
    mockConfig(null);
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    await deliver(app, "pull_request", pullRequestPayload("opened", { draft: true }));
    expect(listPendingEvaluations(app.db)).toEqual([]);
  });

  it("acts once on a duplicate delivery, whether it comes later or concurrently", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 44, runId: 7004 });
    const payload = pullRequestPayload("opened");
    const both = await Promise.allSettled([deliver(app, "pull_request", payload, "dup-1"), deliver(app, "pull_request", payload, "dup-1")]);
    // The one that came while the other was being handled is answered with an error (GitHub keeps
    // it as failed, to redeliver if the first handler died); it is not acted on.
    expect(both.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
    expect(String((both.find((r) => r.status === "rejected") as PromiseRejectedResult).reason)).toContain("is still being handled");
    await deliver(app, "pull_request", payload, "dup-1");
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", workflowRunId: 7004 });
  });

  it("starts a key once when two different deliveries of the same head arrive together", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 45, runId: 7005 });
    // The second delivery reads the config and the probe set too, then finds the key taken.
    mockConfig();
    mockProbeSet();
    await Promise.all([deliver(app, "pull_request", pullRequestPayload("opened"), "a"), deliver(app, "pull_request", pullRequestPayload("labeled"), "b")]);
    expect(getEvaluation(app.db, keyFor())?.workflowRunId).toBe(7005);
    expect(deliveriesFor(app.db, keyFor()).map((d) => d.id).sort()).toEqual(["a", "b"]);
  });

  it("supersedes the older head's evaluation on a new push: cancels its run and says so on its check run", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 46, runId: 7006 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    const newHead = "1234567890abcdef1234567890abcdef12345678";
    nock(API).post("/repos/octo-org/probegate-evaluator/actions/runs/7006/cancel").reply(202, {});
    const superseded = mockCheckRunUpdate(46);
    mockStart({ checkRunId: 47, runId: 7007, sha: newHead, token: false });
    await deliver(app, "pull_request", pullRequestPayload("synchronize", { sha: newHead }));
    expect(superseded[0]).toMatchObject({ status: "completed", conclusion: "cancelled", output: { title: "Superseded by 1234567" } });
    expect(getEvaluation(app.db, keyFor())?.state).toBe("superseded");
    expect(getEvaluation(app.db, keyFor(newHead))).toMatchObject({ state: "dispatched", workflowRunId: 7007 });
  });
});
