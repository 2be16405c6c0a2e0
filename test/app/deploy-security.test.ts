import nock from "nock";
import { describe, expect, it } from "vitest";
import { GATE_CHECK_NAME } from "../../src/core/gate-check.js";
import { getEvaluation } from "../../src/store/evaluations.js";
import { probeFailures } from "../../src/store/dispatch-context.js";
import {
  API,
  CONFIG_YAML,
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
  mockStart,
  mockToken,
  pullRequestPayload,
  resultZip,
  signedResult,
  T0,
  useAppTests,
  workflowRunPayload,
} from "./app-harness.js";

useAppTests();

const GATED = `${CONFIG_YAML}gate: true\n`;

/** A result the submission could have written itself: validly signed, resolved, and `sandboxed: false`. */
function forgedUnsandboxed() {
  const base = signedResult({}, null);
  return signedResult({ verdict: "resolved", reason: "passes everything", probes: base.probes.map((p) => ({ ...p, status: "passed" as const })), environment: { ...base.environment, sandboxed: false } });
}

describe("unsandboxed results (the submission held the signing key)", () => {
  it("refuses a validly signed unsandboxed result: neutral check run with the reason, and the gate fails", async () => {
    const app = await loadApp();
    mockToken();
    mockConfig(GATED);
    mockProbeSet();
    mockCheckRunCreate({ createId: 31 });
    mockDispatch(6101);
    mockCheckRunCreate({ name: GATE_CHECK_NAME, createId: 32 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));

    mockArtifact(6101, resultZip(forgedUnsandboxed()));
    const task = mockCheckRunUpdate(31);
    const gate = mockCheckRunUpdate(32);
    await deliver(app, "workflow_run", workflowRunPayload(6101));
    expect(task[0]).toMatchObject({ conclusion: "neutral", output: { title: "Result refused: the submission ran without the sandbox" } });
    expect(task[0].output.summary).toContain("`sandboxed: false` (its verdict was resolved)");
    expect(task[0].output.summary).toContain("allowUnsandboxed");
    expect(gate[0]).toMatchObject({ conclusion: "failure" });
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "error", verdict: null });
  });

  it("reports it where the repository opts in by name, saying so at the top of the summary", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 33, runId: 6102, config: `${CONFIG_YAML}allowUnsandboxed:\n  reason: "lab runners without user namespaces; agents are ours"\n` });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    mockArtifact(6102, resultZip(forgedUnsandboxed()));
    const task = mockCheckRunUpdate(33);
    await deliver(app, "workflow_run", workflowRunPayload(6102));
    expect(task[0]).toMatchObject({ conclusion: "success", output: { title: "[unsandboxed] Passes official tests and all 2 hidden probes" } });
    expect(task[0].output.summary.startsWith("> ⚠️ **Unsandboxed result, accepted by this repository's config.**")).toBe(true);
    expect(task[0].output.summary).toContain('"lab runners without user namespaces; agents are ours"');
  });
});

describe("what agent PRs see of the hidden probes", () => {
  it("shows categories only by default: no probe id, message or location; the store keeps the full message", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 34, runId: 6103 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    mockArtifact(6103, resultZip(signedResult()));
    const task = mockCheckRunUpdate(34);
    await deliver(app, "workflow_run", workflowRunPayload(6103));
    const out = task[0].output;
    expect(task[0].conclusion).toBe("failure");
    expect(out.summary).toContain("| memory | 0 | 1 | 0 | 0 |");
    expect(out.summary).toContain("Hidden-probe details are withheld");
    for (const secret of ["state-sharded", "64.0 MiB", "dpopt/optim.py"]) expect(JSON.stringify(out)).not.toContain(secret);
    expect(out.annotations ?? []).toEqual([]);
    // Maintainers' copy: the store (and the evaluator run's own job summary) has the message.
    expect(probeFailures(app.db, keyFor(), 1)).toEqual([expect.objectContaining({ probeId: "state-sharded", message: expect.stringContaining("64.0 MiB") })]);
  });

  it("shows the full messages and annotations with `feedback.agentDetail: full`", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 35, runId: 6104, config: `${CONFIG_YAML}feedback:\n  agentDetail: full\n` });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    mockArtifact(6104, resultZip(signedResult()));
    const task = mockCheckRunUpdate(35);
    await deliver(app, "workflow_run", workflowRunPayload(6104));
    expect(task[0].output.summary).toContain("`state-sharded`");
    expect(task[0].output.annotations).toEqual([expect.objectContaining({ path: "dpopt/optim.py", start_line: 42 })]);
  });
});

const sha = (i: number) => i.toString(16).padStart(40, "a");

describe("the per-PR evaluation budget (repeated pushes are an oracle)", () => {
  it("under a push storm evaluates 2 heads an hour, queues the newest with the time it will run, and runs it then", async () => {
    const app = await loadApp();
    const budget = `${CONFIG_YAML}budget:\n  perPrPerHour: 2\n`;
    // Push 1 and 2: evaluated (the second supersedes the first's run).
    mockStart({ checkRunId: 100, runId: 7000, sha: sha(1), config: budget });
    await deliver(app, "pull_request", pullRequestPayload("synchronize", { sha: sha(1) }));
    app.clock.advance(5);
    nock(API).post(`/repos/${EVALUATOR_REPO}/actions/runs/7000/cancel`).reply(202, {});
    mockCheckRunUpdate(100);
    mockStart({ checkRunId: 101, runId: 7001, sha: sha(2), config: budget, token: false });
    await deliver(app, "pull_request", pullRequestPayload("synchronize", { sha: sha(2) }));

    // Pushes 3..6 within the hour: none dispatched; each waits with the time of the next evaluation.
    const creates: any[][] = [];
    for (let i = 3; i <= 6; i++) {
      app.clock.advance(1);
      if (i === 3) {
        nock(API).post(`/repos/${EVALUATOR_REPO}/actions/runs/7001/cancel`).reply(202, {});
        mockCheckRunUpdate(101);
      } else mockCheckRunUpdate(100 + i - 1); // the previous waiting head is superseded
      mockConfig(budget);
      mockProbeSet();
      creates.push(mockCheckRunCreate({ sha: sha(i), createId: 100 + i }));
      await deliver(app, "pull_request", pullRequestPayload("synchronize", { sha: sha(i) }));
    }
    const waiting = creates.flat();
    const nextAt = new Date(T0.getTime() + 60 * 60_000).toISOString().replace(/\.\d{3}Z$/, "Z");
    expect(waiting.map((w) => w.status)).toEqual(["queued", "queued", "queued", "queued"]);
    expect(waiting[3].output.title).toBe(`Waiting: next evaluation at ${nextAt}`);
    expect(getEvaluation(app.db, keyFor(sha(6)))).toMatchObject({ state: "queued", workflowRunId: null });
    expect(getEvaluation(app.db, keyFor(sha(5)))).toMatchObject({ state: "superseded" });

    // Before the window frees up, the sweep leaves it waiting (no mock: any request would fail).
    app.clock.advance(40);
    await app.probegate.sweep();
    // After: the sweep dispatches the newest head; its waiting check run says it is queued now.
    app.clock.advance(15);
    const queuedAgain = mockCheckRunCreate({ sha: sha(6), existing: [{ id: 106, external_id: keyFor(sha(6)), status: "queued" }] });
    const update = mockCheckRunUpdate(106);
    const dispatched = mockDispatch(7006);
    await app.probegate.sweep();
    expect(queuedAgain).toEqual([]);
    expect(update[0]).toMatchObject({ status: "queued", output: { title: "Queued for official tests and hidden probes" } });
    expect(dispatched[0].inputs).toMatchObject({ sha: sha(6) });
    expect(getEvaluation(app.db, keyFor(sha(6)))).toMatchObject({ state: "dispatched", workflowRunId: 7006 });
  });

  it("does not count a redelivery or a maintainer's rerun of the same head", async () => {
    const app = await loadApp();
    const budget = `${CONFIG_YAML}budget:\n  perPrPerHour: 1\n`;
    mockStart({ checkRunId: 120, runId: 7100, config: budget });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    // The same head again (another delivery id): already counted, already running; nothing new.
    mockConfig(budget);
    mockProbeSet();
    await deliver(app, "pull_request", pullRequestPayload("labeled"));
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", headSha: HEAD, workflowRunId: 7100 });
  });
});
