import { describe, expect, it } from "vitest";
import { signResult } from "../../src/engine/sign.js";
import { getEvaluation } from "../../src/store/evaluations.js";
import { rerunAttempts } from "../../src/store/reruns.js";
import { webhookExample } from "../github/webhook-examples.js";
import {
  CHECK_NAME,
  CONFIG_YAML,
  deliver,
  HEAD,
  INSTALLATION,
  keyFor,
  loadApp,
  mockArtifact,
  mockCheckRunCreate,
  mockCheckRunUpdate,
  mockConfig,
  mockDispatch,
  mockPermission,
  mockProbeSet,
  mockPullGet,
  mockReply,
  mockRerunAsk,
  mockToken,
  OWNER,
  PR_NUMBER,
  PROBE_SET,
  pullRequestPayload,
  REPO,
  resultZip,
  SIGNING_KEY,
  signedResult,
  TASK,
  useAppTests,
  workflowRunPayload,
  finishedApp,
} from "./app-harness.js";

useAppTests();

const PR = { owner: OWNER, repo: REPO, pr: PR_NUMBER };
const NEWER = "b".repeat(40);

/**
 * A real `check_suite.rerequested` payload for the example PR's head (installation 1,
 * Codertocat/Hello-World, PR #2 listed), re-run by `sender`.
 */
function checkSuitePayload(opts: { sender?: string; headSha?: string; listed?: boolean } = {}): Record<string, any> {
  const p = webhookExample("check_suite", (x) => x.action === "rerequested" && x.installation);
  p.installation = { id: INSTALLATION };
  p.repository.owner.login = OWNER;
  p.repository.name = REPO;
  p.check_suite.head_sha = opts.headSha ?? HEAD;
  p.sender.login = opts.sender ?? "maintainer";
  p.sender.type = "User";
  const listed = p.check_suite.pull_requests[0];
  listed.number = PR_NUMBER;
  listed.head.sha = p.check_suite.head_sha;
  listed.base.repo.id = p.repository.id;
  // GitHub lists no PR for a head in a fork; the app then looks in its store.
  if (opts.listed === false) p.check_suite.pull_requests = [];
  return p;
}


/** GitHub's side of an accepted rerun of the one-task config: PR, config, permission, probe set, a new check run, dispatch. */
function mockAcceptedRerun(opts: { checkRunId: number; runId: number }): { dispatched: any[] } {
  mockRerunAsk("maintainer", "write");
  mockProbeSet();
  mockCheckRunCreate({ createId: opts.checkRunId, existing: [{ id: 61, external_id: keyFor(), status: "completed" }] });
  return { dispatched: mockDispatch(opts.runId) };
}

describe("check_suite rerequested", () => {
  const PAGED = "paged-kv-cache";
  const TWO_TASKS = CONFIG_YAML.replace("    labels: [bug]\n", `    labels: [bug]\n  - task: ${PAGED}\n    labels: [bug]\n`);
  const pagedKey = `${OWNER}/${REPO}@${HEAD}:${PAGED}:${PROBE_SET.slice(0, 16)}`;

  it("re-runs every task of the suite's head for a maintainer: a new check run and a dispatch per task, one request recorded", async () => {
    const app = await loadApp();
    // The PR maps to two tasks (in route order); both are evaluated and finish.
    mockToken();
    mockConfig(TWO_TASKS);
    mockProbeSet();
    mockCheckRunCreate({ createId: 61 });
    mockCheckRunCreate({ name: `probegate / ${PAGED}`, createId: 71 });
    mockDispatch(9001);
    mockDispatch(9101);
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    mockArtifact(9001, resultZip(signedResult()));
    mockCheckRunUpdate(61);
    await deliver(app, "workflow_run", workflowRunPayload(9001));
    const unsigned = signedResult({}, null);
    mockArtifact(9101, resultZip(signResult({ ...unsigned, evaluationKey: pagedKey, task: { ...unsigned.task, id: PAGED } }, SIGNING_KEY)), 556);
    mockCheckRunUpdate(71);
    await deliver(app, "workflow_run", workflowRunPayload(9101));
    expect([getEvaluation(app.db, keyFor())?.state, getEvaluation(app.db, pagedKey)?.state]).toEqual(["completed", "completed"]);

    mockPullGet();
    mockConfig(TWO_TASKS);
    mockPermission("maintainer", "write");
    mockProbeSet();
    const created = [
      mockCheckRunCreate({ name: CHECK_NAME, createId: 62, existing: [{ id: 61, external_id: keyFor(), status: "completed" }] }),
      mockCheckRunCreate({ name: `probegate / ${PAGED}`, createId: 72, existing: [{ id: 71, external_id: pagedKey, status: "completed" }] }),
    ];
    const dispatched = [mockDispatch(9002), mockDispatch(9102)];
    await deliver(app, "check_suite", checkSuitePayload());

    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", attempt: 2, checkRunId: 62, workflowRunId: 9002 });
    expect(getEvaluation(app.db, pagedKey)).toMatchObject({ state: "dispatched", attempt: 2, checkRunId: 72, workflowRunId: 9102 });
    expect(created.flat().map((b) => [b.name, b.head_sha, b.output.title])).toEqual([
      [CHECK_NAME, HEAD, "Queued again (attempt 2)"],
      [`probegate / ${PAGED}`, HEAD, "Queued again (attempt 2)"],
    ]);
    expect(dispatched.flat().map((b) => [b.inputs.task, b.inputs.sha, b.inputs["evaluation-key"]])).toEqual([
      [TASK, HEAD, keyFor()],
      [PAGED, HEAD, pagedKey],
    ]);
    expect(rerunAttempts(app.db, PR)).toEqual([
      expect.objectContaining({ task: null, requestedBy: "maintainer", source: "check-run", accepted: true, reason: null, evaluationKeys: [pagedKey, keyFor()].sort() }),
    ]);
  });

  it("finds the PR in the store when GitHub lists none (a fork's head)", async () => {
    const app = await finishedApp();
    const { dispatched } = mockAcceptedRerun({ checkRunId: 63, runId: 9003 });
    await deliver(app, "check_suite", checkSuitePayload({ listed: false }));
    expect(dispatched).toHaveLength(1);
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", attempt: 2, workflowRunId: 9003 });
    expect(rerunAttempts(app.db, PR)).toEqual([expect.objectContaining({ source: "check-run", accepted: true })]);
  });

  it("refuses a sender with read permission (asked of GitHub), with a reply that says why", async () => {
    const app = await finishedApp();
    mockRerunAsk("reader", "read");
    const replies = mockReply();
    await deliver(app, "check_suite", checkSuitePayload({ sender: "reader" }));
    expect(replies[0].body).toContain("@reader: reruns need write or admin permission on this repository; you have `read`.");
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "completed", attempt: 1 });
    expect(rerunAttempts(app.db, PR)).toEqual([expect.objectContaining({ requestedBy: "reader", source: "check-run", task: null, accepted: false, reason: "permission" })]);
  });

  it("refuses the suite of a head the PR has moved on from, without evaluating the new head", async () => {
    const app = await finishedApp();
    // The PR is at NEWER now; the suite (and the store's evaluation) are of HEAD.
    mockPullGet(NEWER);
    const replies = mockReply();
    await deliver(app, "check_suite", checkSuitePayload({ listed: false }));
    expect(replies[0].body).toBe(
      `@maintainer: nothing to rerun: those checks are for \`${HEAD.slice(0, 7)}\`, which is no longer the head of this PR (it is \`bbbbbbb\` now). Re-run the checks of the current head.`,
    );
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "completed", attempt: 1 });
    expect(rerunAttempts(app.db, PR)).toEqual([expect.objectContaining({ accepted: false, reason: "stale-head" })]);
  });

  it("ignores a suite whose head the store has no evaluation of, asking GitHub nothing", async () => {
    const app = await finishedApp();
    // A listed PR evaluated at another head, an unlisted head, and a PR of another repository.
    await deliver(app, "check_suite", checkSuitePayload({ headSha: NEWER }));
    await deliver(app, "check_suite", checkSuitePayload({ headSha: NEWER, listed: false }));
    const other = checkSuitePayload();
    other.check_suite.pull_requests[0].base.repo.id = 1;
    other.check_suite.pull_requests[0].number = 99;
    other.check_suite.head_sha = NEWER;
    await deliver(app, "check_suite", other);
    expect(rerunAttempts(app.db, PR)).toEqual([]);
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "completed", attempt: 1 });

    // A store with no evaluations at all.
    const fresh = await loadApp();
    await deliver(fresh, "check_suite", checkSuitePayload());
    expect(rerunAttempts(fresh.db, PR)).toEqual([]);
  });

  it("acts once on a redelivery of the same delivery id", async () => {
    const app = await finishedApp();
    const { dispatched } = mockAcceptedRerun({ checkRunId: 64, runId: 9004 });
    await deliver(app, "check_suite", checkSuitePayload(), "suite-delivery-1");
    // No mock is left for a second rerun: any request would fail the delivery.
    await deliver(app, "check_suite", checkSuitePayload(), "suite-delivery-1");
    expect(dispatched).toHaveLength(1);
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", attempt: 2, workflowRunId: 9004 });
    expect(rerunAttempts(app.db, PR)).toHaveLength(1);
  });
});
