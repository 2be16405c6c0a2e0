import { writeFileSync } from "node:fs";
import { join } from "node:path";
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { evaluateForAction } from "../../src/action/evaluate-for-action.js";
import { resolveGateInputs } from "../../src/action/pr-base.js";
import { readSettings } from "../../src/action/settings.js";
import { InputError } from "../../src/engine/errors.js";
import { loadTask } from "../../src/engine/task-load.js";
import { assertValidBody } from "../github/openapi.js";
import { webhookExample } from "../github/webhook-examples.js";
import { TINY_TASK, tmp } from "../helpers.js";
import { checkoutOf, gateTaskDir, gitIn, prRepository, SYNC_TWICE } from "./gate-fixture.js";

const gate = () => loadTask(gateTaskDir());

describe("the Action's base-sha: a repository gate's base commit", () => {
  it("turns the checked-out PR into <checkout>@<head> with the base from the input (runner mode)", () => {
    const pr = prRepository({ "calc/sync.py": SYNC_TWICE });
    const checkout = checkoutOf(pr.dir, pr.head);
    const got = resolveGateInputs(gate(), checkout, { mode: "runner", baseShaInput: pr.base });
    expect(got.submission).toEqual({ kind: "git", repo: checkout, ref: pr.head });
    expect(got.prBase).toBe(pr.base);
    expect(got.note).toContain(`against base ${pr.base.slice(0, 12)} (input 'base-sha')`);
  });

  it("standalone: takes the base from the pull_request event and the head from the PR, not the checkout's merge commit", () => {
    const pr = prRepository({ "calc/sync.py": SYNC_TWICE });
    // actions/checkout's default for pull_request: the merge commit, whose parents are the base and the head.
    gitIn(pr.dir, "checkout", "-q", "main");
    gitIn(pr.dir, "merge", "-q", "--no-ff", "-m", "merge", "agent/extra-sync");
    const merge = gitIn(pr.dir, "rev-parse", "HEAD");
    const checkout = checkoutOf(pr.dir, merge);
    const got = resolveGateInputs(gate(), checkout, { mode: "standalone", baseShaInput: undefined, pr: { headSha: pr.head, baseSha: pr.base } });
    expect(got.submission).toEqual({ kind: "git", repo: checkout, ref: pr.head });
    expect(got.prBase).toBe(pr.base);
    expect(got.note).toContain("(the pull_request event)");
  });

  it("keeps a repo@sha submission as it is", () => {
    const pr = prRepository({ "calc/sync.py": SYNC_TWICE });
    const got = resolveGateInputs(gate(), `${pr.dir}@${pr.head}`, { mode: "runner", baseShaInput: pr.base });
    expect(got).toMatchObject({ submission: { kind: "git", repo: pr.dir, ref: pr.head }, prBase: pr.base });
  });

  it("is an error naming the input when a gate has no base, and the checkout step when the checkout lacks a commit or history", () => {
    const pr = prRepository({ "calc/sync.py": SYNC_TWICE });
    const full = checkoutOf(pr.dir, pr.head);
    expect(() => resolveGateInputs(gate(), full, { mode: "runner", baseShaInput: undefined })).toThrow(/Input 'base-sha' is required: task calc-gate is a repository gate \(base: \{pr: true\}/);
    // A depth-1 checkout (actions/checkout's default) holds the head only.
    const shallow = checkoutOf(pr.dir, pr.head, 1);
    expect(() => resolveGateInputs(gate(), shallow, { mode: "runner", baseShaInput: pr.base })).toThrow(new RegExp(`lacks the PR's base commit ${pr.base} \\(input 'base-sha'\\).*fetch-depth: 0`));
    // Both commits fetched, but shallowly: no history joins them.
    gitIn(shallow, "fetch", "-q", "--depth=1", `file://${pr.dir}`, pr.base);
    expect(() => resolveGateInputs(gate(), shallow, { mode: "runner", baseShaInput: pr.base })).toThrow(/is shallow, so the history joining the base .* is missing: check out with `fetch-depth: 0`/);
    const plain = tmp("pg-not-git-");
    expect(() => resolveGateInputs(gate(), plain, { mode: "runner", baseShaInput: pr.base })).toThrow(/Input 'submission': .* is not a git checkout/);
    expect(() => resolveGateInputs(gate(), plain, { mode: "standalone", baseShaInput: undefined, pr: { headSha: pr.head, baseSha: pr.base } })).toThrow(/is not a git checkout/);
    const patch = join(tmp(), "change.patch");
    writeFileSync(patch, "");
    expect(() => resolveGateInputs(gate(), patch, { mode: "runner", baseShaInput: pr.base })).toThrow(InputError);
    expect(() => resolveGateInputs(gate(), patch, { mode: "runner", baseShaInput: pr.base })).toThrow(/evaluates the PR's head commit, not a patch/);
  });

  it("an assignment task ignores base-sha and says so, without an error", () => {
    const got = resolveGateInputs(loadTask(TINY_TASK), TINY_TASK, { mode: "runner", baseShaInput: "a".repeat(40) });
    expect(got.prBase).toBeUndefined();
    expect(got.note).toMatch(/base-sha aaaaaaaaaaaa is not used: task tiny-sum is an assignment with a fixed base/);
    expect(resolveGateInputs(loadTask(TINY_TASK), TINY_TASK, { mode: "runner", baseShaInput: undefined }).note).toBeNull();
  });

  it("refuses a base-sha input that is not a commit SHA, naming the input", () => {
    const inputs: Record<string, string> = { mode: "runner", task: "t", submission: "s", "signing-key": "k", "fail-on": "never", "check-name": "probegate", gpus: "all", "remove-probes": "true", unsandboxed: "" };
    expect(readSettings((n) => ({ ...inputs, "base-sha": "  abc1234  " })[n] ?? "")["base-sha"]).toBe("abc1234");
    expect(readSettings((n) => inputs[n] ?? "")["base-sha"]).toBeUndefined();
    expect(() => readSettings((n) => ({ ...inputs, "base-sha": "main" })[n] ?? "")).toThrow(/Input 'base-sha' is invalid: expected the PR's base commit SHA/);
  });
});

describe("standalone mode on a repository gate", () => {
  const TRUSTED = "octo-org/ci-policies/.github/workflows/probegate.yml@refs/heads/main";
  const PROBE = `import json, os
from calc import sync
with open(os.environ["PROBEGATE_RESULTS"], "a") as out:
    out.write(json.dumps({"id": "sync-exists", "category": "functional", "status": "passed" if callable(sync.sync) else "failed", "message": ""}) + "\\n")
`;
  beforeEach(() => nock.disableNetConnect());
  afterEach(() => {
    const pending = nock.pendingMocks();
    nock.cleanAll();
    nock.enableNetConnect();
    expect(pending, "every GitHub mock was used").toEqual([]);
  });

  it("evaluates the PR's head against the event's base.sha on the merge-commit checkout, and posts the check run", async () => {
    const pr = prRepository({ "calc/sync.py": SYNC_TWICE });
    gitIn(pr.dir, "checkout", "-q", "main");
    gitIn(pr.dir, "merge", "-q", "--no-ff", "-m", "merge", "agent/extra-sync");
    const checkout = checkoutOf(pr.dir, gitIn(pr.dir, "rev-parse", "HEAD"));
    const payload = webhookExample("pull_request", (p) => p.action === "opened" && p.installation);
    payload.pull_request.head.sha = pr.head;
    payload.pull_request.base.sha = pr.base;
    const event = join(tmp(), "event.json");
    writeFileSync(event, JSON.stringify(payload));
    const repo = `/repos/${payload.repository.owner.login}/${payload.repository.name}`;
    const bodies: any[] = [];
    nock("https://api.github.com")
      .get(`${repo}/commits/${pr.head}/check-runs`)
      .query(true)
      .reply(200, { total_count: 0, check_runs: [] })
      .post(`${repo}/check-runs`, (b) => assertValidBody("post", "/repos/{owner}/{repo}/check-runs", b) && bodies.push(b) > 0)
      .reply(201, { id: 77 })
      .patch(`${repo}/check-runs/77`, (b) => assertValidBody("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}", b) && bodies.push(b) > 0)
      .reply(200, { id: 77 });
    const task = gateTaskDir({ "probes/probe_sync.py": PROBE });
    const settings = readSettings((n) => ({ mode: "standalone", task, submission: checkout, "fail-on": "never", "check-name": "probegate", gpus: "all", "remove-probes": "false", unsandboxed: "", "github-token": "ghs_test", "trusted-workflow": TRUSTED })[n] ?? "");
    const log: string[] = [];
    const outcome = await evaluateForAction(settings, {
      env: { GITHUB_EVENT_NAME: "pull_request", GITHUB_EVENT_PATH: event, GITHUB_WORKFLOW_REF: TRUSTED, GITHUB_WORKFLOW_SHA: "5".repeat(40), GITHUB_SHA: "6".repeat(40), RUNNER_TEMP: tmp(), GITHUB_API_URL: "https://api.github.com" },
      info: (t) => log.push(t),
      warning: (t) => log.push(t),
      group: (_n, fn) => fn(),
      checkRunCreated: () => undefined,
    });
    expect(log[0]).toContain("(the pull_request event)");
    expect(outcome.result.submission).toMatchObject({ sha: pr.head, prBase: { asked: pr.base, mergeBase: pr.base } });
    expect(outcome.result.verdict).toBe("resolved");
    expect(bodies[0]).toMatchObject({ head_sha: pr.head, status: "in_progress" });
    expect(bodies[1]).toMatchObject({ status: "completed", conclusion: "success" });
  }, 120_000);
});
