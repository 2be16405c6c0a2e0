import nock from "nock";
import { describe, expect, it } from "vitest";
import { GATE_CHECK_NAME } from "../../src/core/gate-check.js";
import { getGate } from "../../src/store/gates.js";
import {
  API,
  CONFIG_YAML,
  deliver,
  EVALUATOR_REPO,
  HEAD,
  loadApp,
  mockArtifact,
  mockCheckRunCreate,
  mockCheckRunUpdate,
  mockCommits,
  mockConfig,
  mockDispatch,
  mockProbeSet,
  mockToken,
  mockTree,
  OWNER,
  pullRequestPayload,
  REPO,
  resultZip,
  signedResult,
  useAppTests,
  workflowRunPayload,
} from "./app-harness.js";

useAppTests();

const GATED = `${CONFIG_YAML}gate: true\n`;

/** An agent PR opened in a gated repository: its task's check run and dispatch, then the gate. */
function mockGatedStart(taskCheck: number, runId: number, gateCheck: number): { gate: any[] } {
  mockToken();
  mockConfig(GATED);
  mockProbeSet();
  mockCheckRunCreate({ createId: taskCheck });
  mockDispatch(runId);
  return { gate: mockCheckRunCreate({ name: GATE_CHECK_NAME, createId: gateCheck }) };
}

describe("the gate check run (gate: true)", () => {
  it("passes at once on a PR no agent wrote, saying why, so a required gate never blocks people", async () => {
    const app = await loadApp();
    mockToken();
    mockConfig(GATED);
    mockCommits("Fix the README");
    const created = mockCheckRunCreate({ name: GATE_CHECK_NAME, createId: 90 });
    const done = mockCheckRunUpdate(90);
    await deliver(app, "pull_request", pullRequestPayload("opened", { author: "Codertocat" }));
    expect(created[0]).toMatchObject({ name: "probegate / gate", head_sha: HEAD, external_id: `gate:${HEAD}` });
    expect(done[0]).toMatchObject({ status: "completed", conclusion: "success", output: { title: "No evaluation needed" } });
    expect(done[0].output.summary).toBe("probegate does not evaluate this pull request: not written by a known agent.");
  });

  it("waits for the agent PR's evaluations and fails when one is rejected", async () => {
    const app = await loadApp();
    const { gate } = mockGatedStart(41, 7101, 91);
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    expect(gate[0]).toMatchObject({ name: "probegate / gate", status: "in_progress", external_id: `gate:${HEAD}` });
    expect(getGate(app.db, { owner: OWNER, repo: REPO, headSha: HEAD })).toMatchObject({ checkRunId: 91, concluded: false });

    mockArtifact(7101, resultZip(signedResult()));
    mockCheckRunUpdate(41);
    const gateDone = mockCheckRunUpdate(91);
    await deliver(app, "workflow_run", workflowRunPayload(7101));
    expect(gateDone[0]).toMatchObject({ status: "completed", conclusion: "failure", output: { title: "1 of 1 evaluation did not resolve: sharded-optimizer" } });
    expect(gateDone[0].output.summary).toContain("| `probegate / sharded-optimizer` | 🚩 probe-rejected |");
    // Marked concluded: a later finish of this head does not post the conclusion again.
    expect(getGate(app.db, { owner: OWNER, repo: REPO, headSha: HEAD })?.concluded).toBe(true);
  });

  it("passes when every evaluation of the head resolved", async () => {
    const app = await loadApp();
    mockGatedStart(42, 7102, 92);
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    const resolved = signedResult({ verdict: "resolved", reason: "passes", probes: [] });
    mockArtifact(7102, resultZip(resolved));
    mockCheckRunUpdate(42);
    const gateDone = mockCheckRunUpdate(92);
    mockTree(HEAD, "a".repeat(40));
    await deliver(app, "workflow_run", workflowRunPayload(7102));
    expect(gateDone[0]).toMatchObject({ conclusion: "success", output: { title: "All 1 evaluation resolved" } });
    // The passed gate keeps its head's tree, for merge groups that hold exactly that tree.
    expect(getGate(app.db, { owner: OWNER, repo: REPO, headSha: HEAD })?.concluded).toBe(true);
  });

  it("is cancelled with the head's evaluations when the PR is closed", async () => {
    const app = await loadApp();
    mockGatedStart(43, 7103, 93);
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    nock(API).post(`/repos/${EVALUATOR_REPO}/actions/runs/7103/cancel`).reply(202, {});
    mockCheckRunUpdate(43);
    const gateDone = mockCheckRunUpdate(93);
    const closed = pullRequestPayload("closed");
    closed.pull_request.state = "closed";
    await deliver(app, "pull_request", closed);
    expect(gateDone[0]).toMatchObject({ conclusion: "cancelled", output: { title: "Not gated: this head's evaluations were cancelled" } });
  });

  it("is not posted where the repository did not ask for it", async () => {
    const app = await loadApp();
    mockToken();
    mockConfig(CONFIG_YAML);
    mockCommits("Fix the README");
    await deliver(app, "pull_request", pullRequestPayload("opened", { author: "Codertocat" }));
    // Every mock used and none for a gate: nothing was posted.
  });
});
