import nock from "nock";
import { describe, expect, it } from "vitest";
import { attemptSummary } from "../../src/store/reruns.js";
import { getEvaluation } from "../../src/store/evaluations.js";
import {
  API,
  deliver,
  FULL_DETAIL_YAML,
  useAppTests,
  type LoadedApp,
  HEAD,
  keyFor,
  loadApp,
  mockArtifact,
  mockCheckRunUpdate,
  mockStart,
  mockToken,
  OWNER,
  PR_NUMBER,
  pullRequestPayload,
  REPO,
  resultZip,
  signedResult,
  SIGNING_KEY,
  TASK,
  workflowRunPayload,
} from "./app-harness.js";

useAppTests();

const CHECK = 51;
const RUN = 8001;

async function dispatched(config?: string): Promise<LoadedApp> {
  const a = await loadApp();
  mockStart({ checkRunId: CHECK, runId: RUN, ...(config ? { config } : {}) });
  await deliver(a, "pull_request", pullRequestPayload("opened"));
  expect(getEvaluation(a.db, keyFor())?.state).toBe("dispatched");
  return a;
}

describe("workflow_run events", () => {
  it("marks the evaluation running and the check run in progress when the run starts", async () => {
    const app = await dispatched();
    const updates = mockCheckRunUpdate(CHECK);
    await deliver(app, "workflow_run", workflowRunPayload(RUN, "in_progress"));
    expect(updates[0]).toMatchObject({ status: "in_progress" });
    expect(getEvaluation(app.db, keyFor())?.state).toBe("running");
  });

  it("reports a signed probe-rejected result: failure, title, summary table, annotations and the rerun button", async () => {
    const app = await dispatched(FULL_DETAIL_YAML);
    mockArtifact(RUN, resultZip(signedResult()));
    const updates = mockCheckRunUpdate(CHECK);
    await deliver(app, "workflow_run", workflowRunPayload(RUN));
    expect(updates[0]).toMatchObject({
      status: "completed",
      conclusion: "failure",
      details_url: `https://github.com/octo-org/probegate-evaluator/actions/runs/${RUN}`,
      actions: [{ label: "Re-run probes", identifier: "rerun" }],
      output: { title: "Passes official tests, fails 1 of 2 hidden probes" },
    });
    expect(updates[0].output.summary).toContain("| memory | 0 | 1 | 0 | 0 |");
    expect(updates[0].output.annotations).toEqual([expect.objectContaining({ path: "dpopt/optim.py", start_line: 42, annotation_level: "failure" })]);
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "completed", verdict: "probe-rejected" });
    expect(attemptSummary(app.db, { owner: OWNER, repo: REPO, pr: PR_NUMBER, task: TASK })?.first.verdict).toBe("probe-rejected");
  });

  it("reports resolved as success and sends more than 50 annotations in batches of 50", async () => {
    const app = await dispatched();
    const failing = Array.from({ length: 120 }, (_, i) => ({ name: `test_${i}`, classname: "t", file: "tests/test_x.py", line: i + 1, kind: "failure" as const, message: "boom" }));
    const base = signedResult({}, null);
    const official = { ...(base.official as NonNullable<typeof base.official>), passed: false, counts: { total: 120, passed: 0, failed: 120, errors: 0, skipped: 0 }, failing };
    const { signResult } = await import("../../src/engine/sign.js");
    mockArtifact(RUN, resultZip(signResult({ ...base, verdict: "official-failed", reason: "official tests fail", official, probes: [] }, SIGNING_KEY)));
    const updates = mockCheckRunUpdate(CHECK, 3);
    await deliver(app, "workflow_run", workflowRunPayload(RUN));
    expect(updates.map((u) => u.output.annotations.length)).toEqual([50, 50, 20]);
    expect(updates[0]).toMatchObject({ conclusion: "failure", output: { title: "Fails 120 of 120 official tests" } });
    expect(updates[1].conclusion).toBeUndefined();
  });

  it("reports a resolved result as success", async () => {
    const app = await dispatched();
    const r = signedResult({}, null);
    const { signResult } = await import("../../src/engine/sign.js");
    mockArtifact(RUN, resultZip(signResult({ ...r, verdict: "resolved", reason: "passes all", probes: r.probes.map((p) => ({ ...p, status: "passed" as const })) }, SIGNING_KEY)));
    const updates = mockCheckRunUpdate(CHECK);
    await deliver(app, "workflow_run", workflowRunPayload(RUN));
    expect(updates[0]).toMatchObject({ conclusion: "success", output: { title: "Passes official tests and all 2 hidden probes" } });
  });

  const forged: Array<[string, () => Uint8Array, RegExp]> = [
    ["a bad signature", () => resultZip({ ...signedResult(), verdict: "resolved" }), /signature does not match/],
    ["another key", () => resultZip(signedResult({}, "someone-elses-key-0123456789")), /signed with another key/],
    ["no signature", () => resultZip(signedResult({}, null)), /not signed/],
    ["a schema violation", () => resultZip({ ...signedResult(), verdict: "excellent" }), /does not match the result schema: `verdict`/],
    ["another evaluation's key (a replay)", () => resultZip(signedResult({ evaluationKey: "Codertocat/Hello-World@0000000000000000000000000000000000000000:sharded-optimizer:9f2c1d0e8b7a6f5e" })), /is for evaluation/],
    ["text that is not JSON", () => resultZip("PASSED"), /not JSON/],
    ["a zip without a .json file", () => resultZip("{}", "result.txt"), /no \.json result file/],
  ];
  it.each(forged)("never reports a result with %s as success: neutral, with the reason", async (_what, zip, why) => {
    const app = await dispatched();
    mockArtifact(RUN, zip());
    const updates = mockCheckRunUpdate(CHECK);
    await deliver(app, "workflow_run", workflowRunPayload(RUN));
    expect(updates[0]).toMatchObject({ status: "completed", conclusion: "neutral", output: { title: "Result rejected" } });
    expect(updates[0].output.summary).toMatch(why);
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "error", verdict: null });
  });

  it("ends as an error when the run left no result artifact", async () => {
    const app = await dispatched();
    nock(API).get(`/repos/octo-org/probegate-evaluator/actions/runs/${RUN}/artifacts`).query(true).reply(200, { total_count: 0, artifacts: [] });
    const updates = mockCheckRunUpdate(CHECK);
    await deliver(app, "workflow_run", workflowRunPayload(RUN, "completed", "failure"));
    expect(updates[0]).toMatchObject({ conclusion: "neutral", output: { title: "No result from the evaluator" } });
    expect(updates[0].output.summary).toContain("ended failure");
  });

  it("ignores runs it did not dispatch, asking GitHub nothing (any request would fail: no mocks, no network)", async () => {
    const app = await dispatched();
    await expect(deliver(app, "workflow_run", workflowRunPayload(424242))).resolves.toBeUndefined();
    expect(getEvaluation(app.db, keyFor())?.state).toBe("dispatched");
  });

  it("survives a restart between dispatch and completion: a new app on the same store finishes the evaluation", async () => {
    const first = await dispatched();
    const file = first.file;
    first.close();
    const app = await loadApp({ file });
    // A new process has no cached installation token.
    mockToken();
    mockArtifact(RUN, resultZip(signedResult()));
    const updates = mockCheckRunUpdate(CHECK);
    await deliver(app, "workflow_run", workflowRunPayload(RUN));
    expect(updates[0]).toMatchObject({ conclusion: "failure" });
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "completed", verdict: "probe-rejected", attempt: 1, headSha: HEAD });
  });
});
