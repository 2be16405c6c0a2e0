import nock from "nock";
import { afterEach, describe, expect, it } from "vitest";
import { GATE_CHECK_NAME } from "../../src/core/gate-check.js";
import { getEvaluation } from "../../src/store/evaluations.js";
import { getGate } from "../../src/store/gates.js";
import { markDeliveryHandled, recordDelivery } from "../../src/store/deliveries.js";
import { webhookExample } from "../github/webhook-examples.js";
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
  mockPullGet,
  mockStart,
  mockToken,
  mockTree,
  OWNER,
  PR_NUMBER,
  PROBE_SET,
  pullRequestPayload,
  REPO,
  resultZip,
  signedResult,
  TASK,
  useAppTests,
  workflowRunPayload,
} from "./app-harness.js";

useAppTests();

/** Requests no mock answered (nock answers them 404, which the app may take for an answer): each test expects none. */
const unmatched: string[] = [];
nock.emitter.on("no match", (req: { method?: string; path?: string }) => unmatched.push(`${req.method} ${req.path}`));
afterEach(() => {
  const seen = unmatched.splice(0);
  expect(seen, "requests without a mock").toEqual([]);
});

const RUNNERS = `${CONFIG_YAML}runners: { 1: arc-gpu-1, 2: arc-gpu-2, 8: arc-gpu-8 }\n`;

/** tasks/<task>/task.yml in the evaluator repository at the probe-set commit. */
function mockTaskYml(text: string | null): void {
  const scope = nock(API).get(`/repos/${EVALUATOR_REPO}/contents/tasks%2F${TASK}%2Ftask.yml`).query({ ref: PROBE_SET });
  if (text === null) scope.reply(404, { message: "Not Found" });
  else scope.reply(200, { type: "file", encoding: "base64", name: "task.yml", path: `tasks/${TASK}/task.yml`, content: Buffer.from(text).toString("base64") });
}

describe("the dispatch names the runner for the task's GPU count", () => {
  it("reads the task's GPUs from the evaluator's task.yml and sends the smallest runner that fits (body valid per GitHub's OpenAPI)", async () => {
    const app = await loadApp();
    const { dispatched } = mockStart({ checkRunId: 201, runId: 8201, config: RUNNERS });
    mockTaskYml(`id: ${TASK}\ntitle: t\ngpus: 2\n`);
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    expect(dispatched[0]).toMatchObject({ ref: "main", inputs: { task: TASK, runner: "arc-gpu-2" } });
  });

  it("takes the route's `gpus:` without reading task.yml, rounding up to a larger runner", async () => {
    const app = await loadApp();
    const { dispatched } = mockStart({ checkRunId: 202, runId: 8202, config: RUNNERS.replace("labels: [bug]", "labels: [bug]\n    gpus: 3") });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    expect(dispatched[0].inputs.runner).toBe("arc-gpu-8");
  });

  it("ends the evaluation as an error, naming the largest runner, when no runner fits", async () => {
    const app = await loadApp();
    mockToken();
    mockConfig(RUNNERS);
    mockProbeSet();
    mockTaskYml(`id: ${TASK}\ngpus: 16\n`);
    mockCheckRunCreate({ createId: 203 });
    const done = mockCheckRunUpdate(203);
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    expect(done[0]).toMatchObject({ conclusion: "neutral", output: { title: "No runner for this task" } });
    expect(done[0].output.summary).toContain("needs 16 GPUs, and the largest runner in `runners:` of .github/probegate.yml has 8 (arc-gpu-8)");
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "error", workflowRunId: null });
  });

  it("sends no runner input where the repository has no `runners:` map (the workflow's default)", async () => {
    const app = await loadApp();
    const { dispatched } = mockStart({ checkRunId: 204, runId: 8204 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    expect(dispatched[0].inputs.runner).toBeUndefined();
  });
});

/** GitHub's answer about an evaluator run. */
function mockRun(runId: number, status: string, conclusion: string | null): void {
  nock(API)
    .get(`/repos/${EVALUATOR_REPO}/actions/runs/${runId}`)
    .reply(200, { id: runId, status, conclusion, html_url: `https://github.com/${EVALUATOR_REPO}/actions/runs/${runId}` });
}

describe("the sweep reconciles runs whose webhook was lost", () => {
  it("finishes an evaluation whose workflow_run.completed never came, as the webhook would have", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 211, runId: 8211 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    // Quiet for 5 minutes: not yet asked about (no mock; any request would fail the test's count).
    app.clock.advance(5);
    await app.probegate.sweep();
    app.clock.advance(6);
    mockRun(8211, "completed", "success");
    mockArtifact(8211, resultZip(signedResult()));
    const done = mockCheckRunUpdate(211);
    await app.probegate.sweep();
    expect(done[0]).toMatchObject({ status: "completed", conclusion: "failure", output: { title: "Passes official tests, fails 1 of 2 hidden probes" } });
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "completed", verdict: "probe-rejected" });
    // The late webhook, if it comes after all, changes nothing.
    await deliver(app, "workflow_run", workflowRunPayload(8211));
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "completed", attempt: 1 });
  });

  it("ends as an error a run that failed without an artifact", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 212, runId: 8212 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    app.clock.advance(11);
    mockRun(8212, "completed", "failure");
    nock(API).get(`/repos/${EVALUATOR_REPO}/actions/runs/8212/artifacts`).query(true).reply(200, { total_count: 0, artifacts: [] });
    const done = mockCheckRunUpdate(212);
    await app.probegate.sweep();
    expect(done[0]).toMatchObject({ conclusion: "neutral", output: { title: "No result from the evaluator" } });
    expect(done[0].output.summary).toContain("ended failure");
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "error" });
  });

  it("marks a started run running, then asks again only after another quiet period", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 213, runId: 8213 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    app.clock.advance(11);
    mockRun(8213, "in_progress", null);
    const started = mockCheckRunUpdate(213);
    await app.probegate.sweep();
    expect(started[0]).toMatchObject({ status: "in_progress" });
    expect(getEvaluation(app.db, keyFor())?.state).toBe("running");
    app.clock.advance(5);
    await app.probegate.sweep(); // asked 5 minutes ago: no request
    app.clock.advance(6);
    mockRun(8213, "in_progress", null);
    await app.probegate.sweep();
    expect(getEvaluation(app.db, keyFor())?.state).toBe("running");
  });
});

const GROUP_HEAD = "2ffea6db159f6b6c47a24e778fb9ef40cf6b1c7d";
const GROUP_BASE = "380387fbc80638b734a49e1be1c4dfec1c01b33c";
const TREE = "31b122c26a97cf9af023e9ddab94a82c6e77b0ea";
const GATED = `${CONFIG_YAML}gate: true\n`;

/** webhooks-examples' merge_group.checks_requested, moved onto the test repository and its PR. */
function mergeGroupPayload(): Record<string, any> {
  const p = webhookExample("merge_group", (x) => x.action === "checks_requested" && x.installation);
  p.repository.owner.login = OWNER;
  p.repository.name = REPO;
  p.repository.full_name = `${OWNER}/${REPO}`;
  p.repository.default_branch = "master";
  p.merge_group.head_ref = `refs/heads/gh-readonly-queue/master/pr-${PR_NUMBER}-929f8209d40f77f4abc622a499c93a83babdbe64`;
  return p;
}

/** The merge group's one commit on its base, holding `tree`. */
function mockCompare(tree: string): void {
  nock(API)
    .get(`/repos/${OWNER}/${REPO}/compare/${GROUP_BASE}...${GROUP_HEAD}`)
    .query({ per_page: "100" })
    .reply(200, { commits: [{ sha: GROUP_HEAD, commit: { tree: { sha: tree } }, parents: [{ sha: GROUP_BASE }] }] });
}

/** A gated agent PR whose only evaluation resolved at HEAD, whose tree is TREE. */
async function passedPr() {
  const app = await loadApp();
  mockStart({ checkRunId: 221, runId: 8221, config: GATED });
  mockCheckRunCreate({ name: GATE_CHECK_NAME, createId: 222 });
  await deliver(app, "pull_request", pullRequestPayload("opened"));
  const base = signedResult({}, null);
  mockArtifact(8221, resultZip(signedResult({ verdict: "resolved", reason: "passes", probes: base.probes.map((p) => ({ ...p, status: "passed" as const })) })));
  mockCheckRunUpdate(221);
  mockCheckRunUpdate(222);
  mockTree(HEAD, TREE);
  await deliver(app, "workflow_run", workflowRunPayload(8221));
  expect(getGate(app.db, { owner: OWNER, repo: REPO, headSha: HEAD })?.concluded).toBe(true);
  return app;
}

describe("merge queues (merge_group)", () => {
  it("passes the gate on the group head when its commit holds the tree of a PR head whose gate passed", async () => {
    const app = await passedPr();
    mockConfig(GATED);
    mockCompare(TREE);
    const created = mockCheckRunCreate({ sha: GROUP_HEAD, name: GATE_CHECK_NAME, createId: 223 });
    const done = mockCheckRunUpdate(223);
    await deliver(app, "merge_group", mergeGroupPayload());
    expect(created[0]).toMatchObject({ name: "probegate / gate", head_sha: GROUP_HEAD, external_id: `gate:${GROUP_HEAD}` });
    expect(done[0]).toMatchObject({ conclusion: "success", output: { title: "Every PR of the merge group passed its gate at the same tree" } });
    expect(done[0].output.summary).toContain(`| \`${GROUP_HEAD.slice(0, 7)}\` | #${PR_NUMBER} | \`${HEAD.slice(0, 7)}\` |`);
  });

  it("evaluates the group head when its tree was never gated (the queue's merge made new code)", async () => {
    const app = await passedPr();
    mockConfig(GATED);
    mockCompare("f".repeat(40));
    mockPullGet();
    mockProbeSet();
    mockCheckRunCreate({ sha: GROUP_HEAD, createId: 224 });
    const dispatched = mockDispatch(8224);
    const gate = mockCheckRunCreate({ sha: GROUP_HEAD, name: GATE_CHECK_NAME, createId: 225 });
    await deliver(app, "merge_group", mergeGroupPayload());
    // Judged against what the queue built the group on, not the PR's own base.
    expect(dispatched[0].inputs).toMatchObject({ sha: GROUP_HEAD, "base-sha": GROUP_BASE, task: TASK });
    expect(gate[0]).toMatchObject({ status: "in_progress", head_sha: GROUP_HEAD });
    expect(getEvaluation(app.db, keyFor(GROUP_HEAD))).toMatchObject({ state: "dispatched", pr: PR_NUMBER });
  });

  it("posts nothing where the repository has no gate", async () => {
    const app = await loadApp();
    mockToken();
    mockConfig(CONFIG_YAML);
    await deliver(app, "merge_group", mergeGroupPayload());
  });
});

describe("signing keys rotate", () => {
  const OLD = "the-previous-signing-key-0123456789";
  it("accepts a result signed with a previous key, and refuses one signed with a key it does not know", async () => {
    const app = await loadApp({ previousSigningKeys: [OLD] });
    mockStart({ checkRunId: 231, runId: 8231 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    mockArtifact(8231, resultZip(signedResult({}, OLD)));
    const done = mockCheckRunUpdate(231);
    await deliver(app, "workflow_run", workflowRunPayload(8231));
    expect(done[0]).toMatchObject({ conclusion: "failure", output: { title: "Passes official tests, fails 1 of 2 hidden probes" } });

    const other = await loadApp({ previousSigningKeys: [OLD] });
    mockStart({ checkRunId: 232, runId: 8232 });
    await deliver(other, "pull_request", pullRequestPayload("opened"));
    mockArtifact(8232, resultZip(signedResult({}, "an-unknown-signing-key-0123456789")));
    const refused = mockCheckRunUpdate(232);
    await deliver(other, "workflow_run", workflowRunPayload(8232));
    expect(refused[0]).toMatchObject({ conclusion: "neutral", output: { title: "Result rejected" } });
    expect(refused[0].output.summary).toMatch(/signed with another key \(key id [0-9a-f]{16}, expected [0-9a-f]{16} or [0-9a-f]{16}\)/);
  });
});

describe("failed webhook deliveries are redelivered (GitHub does not by itself)", () => {
  const attempt = (id: number, guid: string, minutesAgo: number, status: number, clock: { now(): Date }) => ({
    id,
    guid,
    delivered_at: new Date(clock.now().getTime() - minutesAgo * 60_000).toISOString(),
    redelivery: false,
    status: status ? "OK" : "failed to connect",
    status_code: status,
    event: "pull_request",
    action: "opened",
    installation_id: 1,
    repository_id: 1,
  });

  it("asks for each failed delivery once, leaving those that reached the app, the store's, and the old", async () => {
    const app = await loadApp();
    // A delivery the app acted on, though GitHub saw its answer time out.
    recordDelivery(app.db, { id: "g-handled", event: "pull_request.opened" }, app.clock.now());
    markDeliveryHandled(app.db, "g-handled", app.clock.now());
    const list = () =>
      nock(API)
        .get("/app/hook/deliveries")
        .query({ per_page: "100" })
        .reply(200, [
          attempt(14, "g-down", 3, 0, app.clock),
          attempt(13, "g-5xx", 4, 502, app.clock),
          attempt(12, "g-ok", 5, 200, app.clock),
          attempt(11, "g-handled", 6, 0, app.clock),
          attempt(10, "g-old", 90, 0, app.clock),
        ]);
    list();
    const asked: number[] = [];
    nock(API).post(/\/app\/hook\/deliveries\/\d+\/attempts/).times(2).reply(202, function () {
      asked.push(Number(this.req.path.split("/")[4]));
      return {};
    });
    // The sweep of events and of the timer's period asks nothing of this (no mock: it would fail).
    await app.probegate.sweep();
    expect(await app.probegate.redeliver()).toEqual(["g-5xx", "g-down"]);
    expect(asked.sort()).toEqual([13, 14]);
    // Half a minute later GitHub may not list the new attempts yet: they are not asked for again.
    app.clock.advance(0.5);
    list();
    expect(await app.probegate.redeliver()).toEqual([]);
    expect(asked).toHaveLength(2);
  });
});

describe("a delivery whose handler died", () => {
  it("is taken over by a redelivery once its handling is stale, and only then", async () => {
    const app = await loadApp();
    // A process recorded it and was killed before it acted or answered.
    recordDelivery(app.db, { id: "killed-1", event: "pull_request.opened" }, app.clock.now());
    // At once: left to its handler, and answered with an error so that GitHub keeps it as failed.
    await expect(deliver(app, "pull_request", pullRequestPayload("opened"), "killed-1")).rejects.toThrow(/still being handled/);
    expect(getEvaluation(app.db, keyFor())).toBeNull();
    app.clock.advance(6);
    mockStart({ checkRunId: 251, runId: 8251 });
    await deliver(app, "pull_request", pullRequestPayload("opened"), "killed-1");
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", workflowRunId: 8251 });
  });
});

describe("a final check run the process died before posting", () => {
  it("is posted by the sweep from the store's outbox; the redelivered webhook changes nothing", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 261, runId: 8261 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    mockArtifact(8261, resultZip(signedResult()));
    // The evaluation ends in the store, then the process cannot tell GitHub (here: the connection drops).
    nock(API).patch(`/repos/${OWNER}/${REPO}/check-runs/261`).replyWithError("socket hang up");
    await expect(deliver(app, "workflow_run", workflowRunPayload(8261), "wr-1")).rejects.toThrow();
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "completed", verdict: "probe-rejected" });
    await app.probegate.sweep(); // within the grace period: left to its poster
    app.clock.advance(1);
    const posted = mockCheckRunUpdate(261);
    await app.probegate.sweep();
    expect(posted[0]).toMatchObject({ status: "completed", conclusion: "failure", output: { title: "Passes official tests, fails 1 of 2 hidden probes" } });
    await app.probegate.sweep(); // posted once
    await deliver(app, "workflow_run", workflowRunPayload(8261), "wr-1");
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "completed", attempt: 1 });
  });
});
