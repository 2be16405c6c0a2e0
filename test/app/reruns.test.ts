import { describe, expect, it } from "vitest";
import { getEvaluation } from "../../src/store/evaluations.js";
import { attemptSummary, rerunAttempts } from "../../src/store/reruns.js";
import { webhookExample } from "../github/webhook-examples.js";
import {
  BASE,
  commentPayload,
  CONFIG_YAML,
  deliver,
  useAppTests,
  HEAD,
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
  mockReaction,
  mockReply,
  mockToken,
  mockRerunAsk,
  OWNER,
  PR_NUMBER,
  pullRequestPayload,
  REPO,
  resultZip,
  signedResult,
  TASK,
  workflowRunPayload,
  finishedApp,
  FULL_DETAIL_YAML,
} from "./app-harness.js";

useAppTests();

const PR = { owner: OWNER, repo: REPO, pr: PR_NUMBER };


/** GitHub's side of an accepted rerun: PR, config, permission, 👀, probe set, a new check run, dispatch. */
function mockAcceptedRerun(opts: { user: string; checkRunId: number; runId: number; commentId?: number }): { created: any[] } {
  mockRerunAsk(opts.user, "write");
  if (opts.commentId !== undefined) mockReaction(opts.commentId);
  mockProbeSet();
  // The finished check run is listed; a rerun gets a new one beside it.
  const created = mockCheckRunCreate({ createId: opts.checkRunId, existing: [{ id: 61, external_id: keyFor(), status: "completed" }] });
  mockDispatch(opts.runId);
  return { created };
}

describe("/probegate rerun", () => {
  it("re-evaluates the PR's head for a user with write permission: 👀, a new check run, a new attempt, both attempts kept", async () => {
    const app = await finishedApp();
    const { created } = mockAcceptedRerun({ user: "maintainer", checkRunId: 62, runId: 9002, commentId: 777 });
    await deliver(app, "issue_comment", commentPayload("/probegate rerun", { commentId: 777 }));
    expect(created[0]).toMatchObject({ external_id: keyFor(), status: "queued", output: { title: "Queued again (attempt 2)" } });
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", attempt: 2, checkRunId: 62, workflowRunId: 9002 });

    const r = signedResult({}, null);
    const { signResult } = await import("../../src/engine/sign.js");
    mockArtifact(9002, resultZip(signResult({ ...r, verdict: "resolved", reason: "all pass", probes: r.probes.map((p) => ({ ...p, status: "passed" as const })) }, "app-test-signing-key-0123456789")));
    mockCheckRunUpdate(62);
    await deliver(app, "workflow_run", workflowRunPayload(9002));
    const summary = attemptSummary(app.db, { ...PR, task: TASK });
    expect(summary).toMatchObject({ attempts: 2, first: { verdict: "probe-rejected", attempt: 1 }, best: { verdict: "resolved", attempt: 2 } });
    expect(rerunAttempts(app.db, PR)).toEqual([expect.objectContaining({ requestedBy: "maintainer", source: "comment", accepted: true, evaluationKeys: [keyFor()] })]);
  });

  it("dispatches a rerun against the base the head was first evaluated on, though the PR's base branch moved on", async () => {
    const app = await finishedApp();
    mockPullGet(HEAD, "7".repeat(40));
    mockConfig();
    mockPermission("maintainer", "write");
    mockReaction(778);
    mockProbeSet();
    mockCheckRunCreate({ createId: 63, existing: [{ id: 61, external_id: keyFor(), status: "completed" }] });
    const dispatched = mockDispatch(9004);
    await deliver(app, "issue_comment", commentPayload("/probegate rerun", { commentId: 778 }));
    expect(dispatched[0].inputs).toMatchObject({ sha: HEAD, "base-sha": BASE });
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ attempt: 2, baseSha: BASE });
  });

  it("refuses a user with read permission (asked of GitHub), with a reply that says why", async () => {
    const app = await finishedApp();
    mockRerunAsk("reader", "read");
    const replies = mockReply();
    await deliver(app, "issue_comment", commentPayload("/probegate rerun", { user: "reader" }));
    expect(replies[0].body).toContain("@reader: reruns need write or admin permission on this repository; you have `read`.");
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "completed", attempt: 1 });
    expect(rerunAttempts(app.db, PR)).toEqual([expect.objectContaining({ requestedBy: "reader", accepted: false, reason: "permission" })]);
  });

  it("refuses the agent that wrote the PR", async () => {
    const app = await finishedApp();
    mockRerunAsk("copilot-swe-agent[bot]", "write");
    const replies = mockReply();
    await deliver(app, "issue_comment", commentPayload("/probegate rerun", { user: "copilot-swe-agent[bot]" }));
    expect(replies[0].body).toContain("the agent that wrote this PR cannot ask for its own rerun");
    expect(rerunAttempts(app.db, PR)[0]).toMatchObject({ accepted: false, reason: "agent" });
  });

  it("refuses a command in an edited comment without asking GitHub anything else", async () => {
    const app = await finishedApp();
    const replies = mockReply();
    await deliver(app, "issue_comment", commentPayload("/probegate rerun", { action: "edited" }));
    expect(replies[0].body).toContain("commands in edited comments are ignored");
    expect(rerunAttempts(app.db, PR)[0]).toMatchObject({ accepted: false, reason: "edited" });
  });

  it("rate-limits reruns per PR (2 an hour here) and records every attempt", async () => {
    const app = await finishedApp();
    mockAcceptedRerun({ user: "maintainer", checkRunId: 62, runId: 9002, commentId: 1 });
    await deliver(app, "issue_comment", commentPayload("/probegate rerun", { commentId: 1 }));
    // The second rerun while the first still runs: accepted, nothing new to start.
    mockRerunAsk("maintainer", "write");
    mockReaction(2);
    mockProbeSet();
    await deliver(app, "issue_comment", commentPayload("/probegate rerun", { commentId: 2 }));
    mockRerunAsk("maintainer", "write");
    const replies = mockReply();
    await deliver(app, "issue_comment", commentPayload("/probegate rerun", { commentId: 3 }));
    expect(replies[0].body).toMatch(/this PR has had 2 reruns in the last hour \(the limit is 2\)/);
    expect(rerunAttempts(app.db, PR).map((a) => [a.accepted, a.reason])).toEqual([
      [true, null],
      [true, null],
      [false, "rate-limited"],
    ]);
  });

  it("refuses a rerun of a task the PR does not map to, without a 👀", async () => {
    const app = await finishedApp();
    mockRerunAsk("maintainer", "write");
    const replies = mockReply();
    await deliver(app, "issue_comment", commentPayload("/probegate rerun paged-kv-cache"));
    expect(replies[0].body).toBe("@maintainer: nothing to rerun: task paged-kv-cache is not one this PR maps to (it maps to sharded-optimizer).");
    expect(rerunAttempts(app.db, PR)[0]).toMatchObject({ task: "paged-kv-cache", accepted: false, reason: "not-routed" });
  });

  it("answers a comment on an issue that is not a pull request", async () => {
    const app = await loadApp();
    mockToken();
    const replies = mockReply();
    await deliver(app, "issue_comment", commentPayload("/probegate rerun", { onPr: false }));
    expect(replies[0].body).toContain("probegate commands work on pull requests only");
    expect(rerunAttempts(app.db, PR)).toEqual([]);
  });

  it("answers a malformed command with the usage, and ignores comments without one", async () => {
    const app = await loadApp();
    mockToken();
    const replies = mockReply();
    await deliver(app, "issue_comment", commentPayload("/probegate frobnicate"));
    await deliver(app, "issue_comment", commentPayload("Looks good to me. `/probegate rerun` later maybe"));
    expect(replies).toHaveLength(1);
    expect(replies[0].body).toContain("`/probegate frobnicate` is not a probegate command.");
  });
});

describe("check_run rerequested / requested_action", () => {
  function checkRunPayload(action: "rerequested" | "requested_action"): Record<string, any> {
    const p = webhookExample("check_run", (x) => x.action === action && x.installation);
    p.installation = { id: 1 };
    p.check_run.external_id = keyFor();
    p.sender.login = "maintainer";
    if (action === "requested_action") p.requested_action = { identifier: "rerun" };
    return p;
  }

  it.each(["rerequested", "requested_action"] as const)("re-evaluates the PR's head on %s", async (action) => {
    const app = await finishedApp();
    mockAcceptedRerun({ user: "maintainer", checkRunId: 63, runId: 9003 });
    await deliver(app, "check_run", checkRunPayload(action));
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", attempt: 2, workflowRunId: 9003 });
    expect(rerunAttempts(app.db, PR)[0]).toMatchObject({ source: "check-run", accepted: true });
  });

  it("refuses the button on an older commit's check run once the PR has moved on, saying which commit is the head", async () => {
    const app = await finishedApp();
    const newHead = "fedcba9876543210fedcba9876543210fedcba98";
    mockPullGet(newHead);
    const replies = mockReply();
    await deliver(app, "check_run", checkRunPayload("requested_action"));
    expect(replies[0].body).toBe(
      `@maintainer: nothing to rerun: those checks are for \`${HEAD.slice(0, 7)}\`, which is no longer the head of this PR (it is \`fedcba9\` now). Re-run the checks of the current head.`,
    );
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "completed", attempt: 1 });
    expect(rerunAttempts(app.db, PR)[0]).toMatchObject({ source: "check-run", accepted: false, reason: "stale-head" });
  });
});

describe("/probegate explain", () => {
  it("replies with the failed probes' categories and what they check, without probe source", async () => {
    const app = await finishedApp(FULL_DETAIL_YAML);
    mockPullGet();
    const replies = mockReply();
    await deliver(app, "issue_comment", commentPayload("/probegate explain"));
    const body = replies[0].body as string;
    expect(body).toContain(`**${TASK}** at \`${HEAD.slice(0, 7)}\`: probe-rejected`);
    expect(body).toContain("- **memory** (1) — checks peak memory");
    expect(body).toContain("`state-sharded` failed: optimizer state per rank is 64.0 MiB");
    expect(body).not.toContain("structure");
    expect(body).not.toMatch(/def |import /);
  });

  it("shows categories only, on this thread the agent reads, when the repository withholds details (the default)", async () => {
    const app = await finishedApp();
    mockPullGet();
    const replies = mockReply();
    await deliver(app, "issue_comment", commentPayload("/probegate explain"));
    const body = replies[0].body as string;
    expect(body).toContain("- **memory** (1) — checks peak memory");
    expect(body).not.toContain("state-sharded");
    expect(body).not.toContain("64.0 MiB");
    expect(body).toContain("maintainers read them in the evaluator run");
  });
});

describe("config errors", () => {
  it("puts a failing check run on the head that names the field and the YAML line", async () => {
    const app = await loadApp();
    mockToken();
    mockConfig(CONFIG_YAML.replace("perPrPerHour: 2", "perPrPerHour: lots"));
    mockCheckRunCreate({ name: "probegate / config", createId: 70 });
    const updates = mockCheckRunUpdate(70);
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    expect(updates[0]).toMatchObject({ conclusion: "failure", output: { title: ".github/probegate.yml is invalid (1 problem)" } });
    expect(updates[0].output.summary).toContain("`.github/probegate.yml:10` — `reruns.perPrPerHour`");
    expect(updates[0].output.annotations).toEqual([expect.objectContaining({ path: ".github/probegate.yml", start_line: 10 })]);
  });
});
