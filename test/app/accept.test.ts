import nock from "nock";
import { describe, expect, it } from "vitest";
import { acceptancesOf, fullyAccepted } from "../../src/store/acceptances.js";
import { getEvaluation } from "../../src/store/evaluations.js";
import { API, commentPayload, deliver, expectAllMocksUsed, finishedApp, HEAD, keyFor, mockCheckRunUpdate, mockReply, mockRerunAsk, OWNER, REPO, signedResult, useAppTests } from "./app-harness.js";

useAppTests();

const CMD = "/probegate accept state-sharded the new layout keeps one replica of the state on purpose";

/** The finished check run 61 as GitHub returns it. */
function mockCheckRunGet(): void {
  nock(API)
    .get(`/repos/${OWNER}/${REPO}/check-runs/61`)
    .reply(200, { id: 61, head_sha: HEAD, status: "completed", conclusion: "failure", output: { title: "Rejected by hidden probes: memory", summary: "| check | … |" } });
}

describe("/probegate accept", () => {
  it("lets a maintainer accept a measured difference for this head: stored with who and why, the check run passes as accepted", async () => {
    const app = await finishedApp();
    mockRerunAsk("maintainer", "write");
    mockCheckRunGet();
    const patched = mockCheckRunUpdate(61);
    const replies = mockReply();
    await deliver(app, "issue_comment", commentPayload(CMD));
    expectAllMocksUsed();
    const e = getEvaluation(app.db, keyFor());
    expect(acceptancesOf(app.db, keyFor(), 1)).toEqual([expect.objectContaining({ checkId: "state-sharded", by: "maintainer", headSha: HEAD, reason: "the new layout keeps one replica of the state on purpose" })]);
    expect(fullyAccepted(app.db, e!)).toBe(true);
    // The signed verdict stays: the acceptance is said beside it.
    expect(e?.verdict).toBe("probe-rejected");
    expect(patched[0]).toMatchObject({ conclusion: "success", output: { title: expect.stringMatching(/^Accepted: 1 measured difference/) } });
    expect(patched[0].output.summary).toContain("`state-sharded`: accepted by @maintainer — the new layout keeps one replica of the state on purpose");
    expect(replies[0].body).toMatch(/@maintainer accepted `state-sharded` of `sharded-optimizer`/);
  });

  it("accepts every failed check a `prefix*` pattern names, each stored with the same who and why", async () => {
    const base = signedResult({}, null);
    const guard = (n: number) => ({ ...base.probes[0]!, id: `weakened-tests.expectation-changed-${n}`, category: "structure" as const, status: "failed" as const, message: `test_prefill now checks \`ids == [${n}]\` where the base checked \`ids == [${n - 1}]\``, measured: {} });
    const app = await finishedApp(undefined, { probes: [...base.probes, guard(1), guard(2)] });
    mockRerunAsk("maintainer", "write");
    const replies = mockReply();
    await deliver(app, "issue_comment", commentPayload("/probegate accept weakened-tests.expectation-changed-* v0.8.3 reserves block 0 as the null block: every id moves by one"));
    expectAllMocksUsed();
    expect(acceptancesOf(app.db, keyFor(), 1).map((a) => [a.checkId, a.by])).toEqual([
      ["weakened-tests.expectation-changed-1", "maintainer"],
      ["weakened-tests.expectation-changed-2", "maintainer"],
    ]);
    // state-sharded still fails: the pattern named only the guard's two checks.
    expect(fullyAccepted(app.db, getEvaluation(app.db, keyFor())!)).toBe(false);
    expect(replies[0].body).toMatch(/accepted 2 checks matching `weakened-tests.expectation-changed-\*` \(`weakened-tests.expectation-changed-1`, `weakened-tests.expectation-changed-2`\) of `sharded-optimizer`.* 1 other check still fails/);
  });

  it("refuses someone without write permission, and the agent that wrote the PR", async () => {
    const app = await finishedApp();
    mockRerunAsk("reader", "read");
    let replies = mockReply();
    await deliver(app, "issue_comment", commentPayload(CMD, { user: "reader" }));
    expect(replies[0].body).toContain("@reader: accepting a measured difference needs write permission on this repository; you have `read`.");
    mockRerunAsk("copilot-swe-agent[bot]", "write");
    replies = mockReply();
    await deliver(app, "issue_comment", commentPayload(CMD, { user: "copilot-swe-agent[bot]" }));
    expect(replies[0].body).toContain("an agent cannot accept a difference its own change makes");
    expectAllMocksUsed();
    expect(acceptancesOf(app.db, keyFor(), 1)).toEqual([]);
  });

  it("accepts nothing for a check that did not fail on the current head, and ignores edited comments", async () => {
    const app = await finishedApp();
    mockRerunAsk("maintainer", "write", "f".repeat(40));
    let replies = mockReply();
    await deliver(app, "issue_comment", commentPayload(CMD));
    expect(replies[0].body).toMatch(/no failed check `state-sharded` on the current head `fffffff`; nothing was accepted/);
    replies = mockReply();
    await deliver(app, "issue_comment", commentPayload(CMD, { action: "edited" }));
    expect(replies[0].body).toContain("commands in edited comments are ignored");
    expectAllMocksUsed();
    expect(acceptancesOf(app.db, keyFor(), 1)).toEqual([]);
  });
});
