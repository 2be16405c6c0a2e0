import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import nock from "nock";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { EvaluationResultSchema } from "../../src/core/result.js";
import { verifyResult } from "../../src/engine/sign.js";
import { assertValidBody } from "../github/openapi.js";
import { webhookExample } from "../github/webhook-examples.js";
import { FIXTURES, ROOT, TINY_SUBS, TINY_TASK, tmp } from "../helpers.js";

const DIST = join(ROOT, "dist", "action", "index.js");
const API = "https://api.github.com";
const KEY = "test-signing-key-0123456789abcdef";
/** The central workflow these runs come from (GITHUB_WORKFLOW_REF), and so the one trusted with the probes. */
const TRUSTED = "octo-org/ci-policies/.github/workflows/probegate.yml@refs/heads/main";
let runs = 0;

interface ActionRun {
  failed: boolean;
  outputs: Record<string, string>;
  summary: string;
  stdout: string;
}

/** Parses the file-command format @actions/core writes to $GITHUB_OUTPUT. */
function readOutputs(file: string): Record<string, string> {
  const out: Record<string, string> = {};
  const text = existsSync(file) ? readFileSync(file, "utf8") : "";
  const re = /^([^<\n]+)<<(ghadelimiter_[\w-]+)\n([\s\S]*?)\n\2$/gm;
  for (const m of text.matchAll(re)) out[m[1] as string] = m[3] as string;
  return out;
}

/** Runs the committed bundle in this process, as the runner does: INPUT_* env, file commands, event payload. */
async function runAction(inputs: Record<string, string>, env: Record<string, string> = {}): Promise<ActionRun> {
  const dir = tmp("pg-action-");
  const files = { GITHUB_OUTPUT: join(dir, "output"), GITHUB_STEP_SUMMARY: join(dir, "summary"), RUNNER_TEMP: dir };
  for (const f of [files.GITHUB_OUTPUT, files.GITHUB_STEP_SUMMARY]) writeFileSync(f, "");
  const defaults = { "fail-on": "probe-rejected", "check-name": "probegate", gpus: "all", "remove-probes": "false", "github-token": "ghs_test", "trusted-workflow": TRUSTED };
  const saved = { ...process.env };
  for (const [k, v] of Object.entries({ ...defaults, ...inputs })) process.env[`INPUT_${k.toUpperCase()}`] = v;
  Object.assign(
    process.env,
    files,
    { GITHUB_API_URL: API, GITHUB_SERVER_URL: "https://github.com", GITHUB_ACTIONS: "true", GITHUB_WORKFLOW_REF: TRUSTED, GITHUB_WORKFLOW_SHA: "5".repeat(40) },
    env,
  );
  let stdout = "";
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string) => ((stdout += String(chunk)), true)) as typeof process.stdout.write;
  process.exitCode = undefined;
  try {
    await import(/* @vite-ignore */ `${pathToFileURL(DIST).href}?run=${++runs}`);
  } finally {
    process.stdout.write = write;
    process.env = saved;
  }
  const failed = process.exitCode === 1;
  process.exitCode = undefined;
  return { failed, outputs: readOutputs(files.GITHUB_OUTPUT), summary: readFileSync(files.GITHUB_STEP_SUMMARY, "utf8"), stdout };
}

function pullRequestEvent(): { path: string; owner: string; repo: string; sha: string } {
  const payload = webhookExample("pull_request", (p) => p.action === "opened" && p.installation);
  const path = join(tmp(), "event.json");
  writeFileSync(path, JSON.stringify(payload));
  return { path, owner: payload.repository.owner.login, repo: payload.repository.name, sha: payload.pull_request.head.sha };
}

/** A checkout of the PR head: the fixture base with `files` written over it. */
function checkout(task: string, files: Record<string, string>): string {
  const dir = join(tmp(), "checkout");
  cpSync(join(FIXTURES, "tasks", task, "base"), dir, { recursive: true });
  for (const [p, c] of Object.entries(files)) writeFileSync(join(dir, p), c);
  return dir;
}

/**
 * GitHub's side of a standalone run that creates check run `id`: the lookup by ref (none found),
 * the create, and `updates` PATCHes. Every body is checked against the OpenAPI spec and collected.
 */
function mockNewCheckRun(ev: { owner: string; repo: string; sha: string }, id: number, updates: number): { created: any[]; updated: any[] } {
  const created: any[] = [];
  const updated: any[] = [];
  const repo = `/repos/${ev.owner}/${ev.repo}`;
  nock(API)
    .get(`${repo}/commits/${ev.sha}/check-runs`)
    .query({ check_name: "probegate", filter: "all", per_page: "100" })
    .reply(200, { total_count: 0, check_runs: [] })
    .post(`${repo}/check-runs`, (b) => assertValidBody("post", "/repos/{owner}/{repo}/check-runs", b) && created.push(b) > 0)
    .reply(201, { id })
    .patch(`${repo}/check-runs/${id}`, (b) => assertValidBody("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}", b) && updated.push(b) > 0)
    .times(updates)
    .reply(200, { id });
  return { created, updated };
}

const GOOD = "def add(a, b):\n    return a + b\n\n\ndef total(xs):\n    return sum(xs)\n";

beforeAll(() => {
  if (!existsSync(DIST)) throw new Error("dist/action/index.js is missing: run npm run build");
});
beforeEach(() => {
  nock.disableNetConnect();
});
afterEach(() => {
  const pending = nock.pendingMocks();
  nock.cleanAll();
  nock.enableNetConnect();
  expect(pending, "every GitHub mock was used").toEqual([]);
});

describe("standalone mode", () => {
  it("creates an in-progress check run, then completes it with the verdict, summary and outputs", async () => {
    const ev = pullRequestEvent();
    const { created, updated } = mockNewCheckRun(ev, 4242, 1);
    const r = await runAction(
      { mode: "standalone", task: TINY_TASK, submission: checkout("tiny-sum", { "sumlib/__init__.py": GOOD }) },
      { GITHUB_EVENT_NAME: "pull_request", GITHUB_EVENT_PATH: ev.path },
    );
    expect(r.failed).toBe(false);
    expect(r.outputs).toMatchObject({ verdict: "resolved", "probes-failed": "0", "probes-total": "3", "check-run-id": "4242" });
    expect(created[0]).toMatchObject({ name: "probegate", head_sha: ev.sha, status: "in_progress", external_id: expect.stringContaining(`${ev.owner}/${ev.repo}@${ev.sha}:tiny-sum:`) });
    expect(updated[0]).toMatchObject({ status: "completed", conclusion: "success", output: { title: "Passes official tests and all 3 hidden probes" } });
    expect(r.summary).toContain("✅ Resolved");
    expect(r.summary).toContain("| functional | 1 | 0 | 0 | 0 |");
    expect(EvaluationResultSchema.parse(JSON.parse(readFileSync(r.outputs["result-path"] as string, "utf8"))).verdict).toBe("resolved");
    // The sidecar a results-folder scorecard reads: which PR, who wrote it.
    const context = JSON.parse(readFileSync((r.outputs["result-path"] as string).replace(/\.json$/, ".context.json"), "utf8"));
    const payload = JSON.parse(readFileSync(ev.path, "utf8"));
    expect(context).toMatchObject({ repo: `${ev.owner}/${ev.repo}`, pr: payload.pull_request.number, headSha: ev.sha, author: payload.pull_request.user.login });
  });

  it("posts more than 50 annotations over several updates, and fails the step on probe-rejected", async () => {
    const ev = pullRequestEvent();
    const funcs = Array.from({ length: 73 }, (_, i) => `def f${i}():\n    return ${i}\n`).join("\n");
    const { updated: updates } = mockNewCheckRun(ev, 7, 2);
    const r = await runAction(
      { mode: "standalone", task: join(FIXTURES, "tasks", "docstrings"), submission: checkout("docstrings", { "pkg/__init__.py": `def first():\n    """The first function."""\n    return 1\n\n\n${funcs}` }) },
      { GITHUB_EVENT_NAME: "pull_request", GITHUB_EVENT_PATH: ev.path },
    );
    expect(r.failed).toBe(true);
    expect(r.outputs).toMatchObject({ verdict: "probe-rejected", "probes-failed": "73" });
    expect(updates.map((u) => u.output.annotations.length)).toEqual([50, 23]);
    expect(updates[0]).toMatchObject({ conclusion: "failure", output: { title: "Passes official tests, fails 73 of 74 hidden probes" } });
    expect(updates[1].conclusion).toBeUndefined();
    expect(updates.flatMap((u) => u.output.annotations).every((a: any) => a.path === "pkg/__init__.py" && a.annotation_level === "failure")).toBe(true);
  });

  it("reuses the check run an earlier attempt created for the same evaluation key", async () => {
    const ev = pullRequestEvent();
    const { evaluationKey } = await import("../../src/core/evaluation-key.js");
    const { probeSetVersion } = await import("../../src/engine/probe-set.js");
    const key = evaluationKey({ owner: ev.owner, repo: ev.repo, headSha: ev.sha, task: "tiny-sum", probeSet: probeSetVersion(join(FIXTURES, "probes", "tiny-sum")) });
    nock(API)
      .get(`/repos/${ev.owner}/${ev.repo}/commits/${ev.sha}/check-runs`)
      .query(true)
      .reply(200, { total_count: 2, check_runs: [{ id: 1, external_id: "other", status: "completed" }, { id: 99, external_id: key, status: "in_progress" }] })
      .patch(`/repos/${ev.owner}/${ev.repo}/check-runs/99`, (b) => assertValidBody("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}", b))
      .reply(200, { id: 99 });
    const r = await runAction(
      { mode: "standalone", task: TINY_TASK, submission: checkout("tiny-sum", { "sumlib/__init__.py": GOOD }) },
      { GITHUB_EVENT_NAME: "pull_request", GITHUB_EVENT_PATH: ev.path },
    );
    expect(r.outputs["check-run-id"]).toBe("99");
  });

  it("refuses to read the probes or sign in a workflow that came from the PR", async () => {
    const ev = pullRequestEvent();
    const probes = join(tmp(), "private-probes");
    cpSync(join(FIXTURES, "probes", "tiny-sum"), probes, { recursive: true });
    const fromPr = `${ev.owner}/${ev.repo}/.github/workflows/probegate.yml@refs/pull/2/merge`;
    const r = await runAction(
      { mode: "standalone", task: TINY_TASK, probes, "remove-probes": "true", "signing-key": KEY, submission: checkout("tiny-sum", {}) },
      { GITHUB_EVENT_NAME: "pull_request", GITHUB_EVENT_PATH: ev.path, GITHUB_WORKFLOW_REF: fromPr, GITHUB_WORKFLOW_SHA: "6".repeat(40), GITHUB_SHA: "6".repeat(40) },
    );
    expect(r.failed).toBe(true);
    expect(r.stdout).toContain(`this step runs in ${fromPr}`);
    expect(r.stdout).toContain(`trusted-workflow is ${TRUSTED}`);
    expect(r.outputs["result-path"]).toBeUndefined();
    expect(existsSync(probes)).toBe(false);
  });

  it("refuses pull_request_target", async () => {
    const ev = pullRequestEvent();
    const r = await runAction({ mode: "standalone", task: TINY_TASK, submission: checkout("tiny-sum", {}) }, { GITHUB_EVENT_NAME: "pull_request_target", GITHUB_EVENT_PATH: ev.path });
    expect(r.failed).toBe(true);
    expect(r.stdout).toMatch(/::error::standalone mode runs on 'pull_request' events only/);
  });
});

describe("runner mode", () => {
  it("signs the result with the evaluation key, calls no GitHub API, and removes the probes", async () => {
    const probes = join(tmp(), "private-probes");
    cpSync(join(FIXTURES, "probes", "tiny-sum"), probes, { recursive: true });
    const r = await runAction({
      mode: "runner",
      task: TINY_TASK,
      submission: join(TINY_SUBS, "mutates-input.patch"),
      probes,
      "remove-probes": "true",
      "signing-key": KEY,
      "evaluation-key": "octo/repo@abc:tiny-sum:0123",
      "fail-on": "never",
      "github-token": "",
    });
    expect(r.failed).toBe(false);
    expect(r.outputs.verdict).toBe("probe-rejected");
    const result = EvaluationResultSchema.parse(JSON.parse(readFileSync(r.outputs["result-path"] as string, "utf8")));
    expect(result.evaluationKey).toBe("octo/repo@abc:tiny-sum:0123");
    expect(verifyResult(result, KEY)).toEqual({ ok: true });
    expect(existsSync(probes)).toBe(false);
    expect(r.stdout).not.toContain("CANARY-PROBE-7f3a9c");
    expect(r.summary).not.toContain("CANARY-PROBE-7f3a9c");
  });
});

describe("on an example task of the pack", () => {
  it("standalone: a submission that passes every official test is flagged on its check run", async () => {
    const ev = pullRequestEvent();
    const { updated: updates } = mockNewCheckRun(ev, 31, 1);
    const r = await runAction(
      { mode: "standalone", task: join(ROOT, "tasks", "paged-kv-cache"), submission: join(ROOT, "examples", "submissions", "paged-kv-cache", "free-leaks-shared-blocks.patch") },
      { GITHUB_EVENT_NAME: "pull_request", GITHUB_EVENT_PATH: ev.path },
    );
    expect(r.failed).toBe(true);
    expect(r.outputs.verdict).toBe("probe-rejected");
    expect(updates[0]).toMatchObject({ conclusion: "failure", output: { title: expect.stringMatching(/^Passes official tests, fails \d+ of \d+ hidden probes$/) } });
    const annotations = updates[0].output.annotations as any[];
    expect(annotations.length).toBeGreaterThan(0);
    expect(annotations.every((a) => a.path.startsWith("pagedkv/") && a.annotation_level === "failure" && a.title.startsWith("state probe failed"))).toBe(true);
  }, 300_000);
});

describe("bad inputs fail the step with a message naming the input", () => {
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ["unknown mode", { mode: "local", task: TINY_TASK }, /Input 'mode' is invalid: expected 'runner' or 'standalone', got 'local'/],
    ["missing task", { mode: "runner", task: "", submission: TINY_SUBS, "signing-key": KEY }, /Input 'task' is required/],
    ["task that does not exist", { mode: "runner", task: "/nonexistent/task", submission: TINY_SUBS, "signing-key": KEY }, /Input 'task': Cannot read task spec/],
    ["probes path that does not exist", { mode: "runner", task: TINY_TASK, submission: TINY_SUBS, "signing-key": KEY, probes: "/nonexistent/probes" }, /Input 'probes': folder \/nonexistent\/probes does not exist/],
    ["invalid fail-on", { mode: "runner", task: TINY_TASK, submission: TINY_SUBS, "signing-key": KEY, "fail-on": "sometimes" }, /Input 'fail-on' is invalid: expected one of probe-rejected, official-failed, any, never, probe-rejected-only, official-failed-only, got 'sometimes'/],
    ["runner without a signing key", { mode: "runner", task: TINY_TASK, submission: TINY_SUBS }, /Input 'signing-key' is required in runner mode/],
  ];
  it.each(cases)("%s", async (_n, inputs, message) => {
    const r = await runAction(inputs);
    expect(r.failed).toBe(true);
    expect(r.stdout).toMatch(message);
  });
});
