import { join } from "node:path";
import nock from "nock";
import { Probot } from "probot";
import { afterEach, beforeEach, expect } from "vitest";
import { createProbegate, type Probegate } from "../../src/app/app.js";
import { probegateOctokit } from "../../src/app/octokit.js";
import type { EvaluationResult } from "../../src/core/result.js";
import { openStore, type StoreDb } from "../../src/store/db.js";
import { getEvaluation } from "../../src/store/evaluations.js";
import { assertValidBody } from "../github/openapi.js";
import { tmp } from "../helpers.js";
import { API, CHECK_NAME, CONFIG_YAML, EVALUATOR_REPO, HEAD, INSTALLATION, OWNER, PR_NUMBER, PRIVATE_KEY, PROBE_SET, REPO, SIGNING_KEY, T0, keyFor, pullRequestPayload, resultZip, signedResult, workflowRunPayload } from "./app-fixtures.js";

export * from "./app-fixtures.js";

export function mockTree(sha: string, tree: string): void {
  nock(API).get(`${repoPath}/git/commits/${sha}`).reply(200, { sha, tree: { sha: tree, url: "" } });
}

/** A settable clock for the app. */
export class Clock {
  t = T0.getTime();
  now = (): Date => new Date(this.t);
  advance(minutes: number): void {
    this.t += minutes * 60_000;
  }
}

export interface LoadedApp {
  probot: Probot;
  probegate: Probegate;
  db: StoreDb;
  file: string;
  clock: Clock;
  close(): void;
}

/**
 * The app loaded into a Probot that talks to nock. Retry is off unless asked for (then with tiny
 * delays); throttling is off unless asked for, because its write spacing of 1 s would slow every test.
 */
export async function loadApp(
  opts: { file?: string; clock?: Clock; retry?: boolean; throttle?: boolean; retryAfterBaseValue?: number; previousSigningKeys?: string[]; redeliverEveryMs?: number } = {},
): Promise<LoadedApp> {
  const file = opts.file ?? join(tmp("pg-app-"), "probegate.sqlite");
  const clock = opts.clock ?? new Clock();
  const db = openStore(file);
  const probot = new Probot({
    appId: 123,
    privateKey: PRIVATE_KEY,
    secret: "test-webhook-secret",
    logLevel: "fatal",
    Octokit: probegateOctokit({ retry: opts.retry ?? false, throttle: opts.throttle ?? false, retryAfterBaseValue: opts.retryAfterBaseValue ?? 1 }),
  });
  const probegate = createProbegate({ db, signingKey: SIGNING_KEY, now: clock.now, sweepEveryMs: 0, ...(opts.previousSigningKeys ? { previousSigningKeys: opts.previousSigningKeys } : {}),
    ...(opts.redeliverEveryMs ? { redeliverEveryMs: opts.redeliverEveryMs } : {}),
  });
  await probot.load(probegate.app);
  await probegate.resumed();
  const app = {
    probot,
    probegate,
    db,
    file,
    clock,
    close: () => {
      probegate.stop();
      if (db.open) db.close();
    },
  };
  loaded.push(app);
  return app;
}

const loaded: LoadedApp[] = [];

/**
 * The lifecycle of an app test file: no real network, and after each test every app it loaded is
 * closed and every GitHub mock must have been used.
 */
export function useAppTests(): void {
  beforeEach(() => nock.disableNetConnect());
  afterEach(() => {
    for (const a of loaded.splice(0)) a.close();
    expectAllMocksUsed();
    nock.enableNetConnect();
  });
}

/** Delivers an event the way GitHub would, with a delivery id. */
export function deliver(app: LoadedApp, name: string, payload: Record<string, unknown>, id = `delivery-${Math.random().toString(36).slice(2)}`): Promise<void> {
  return app.probot.receive({ id, name, payload } as Parameters<Probot["receive"]>[0]);
}

const repoPath = `/repos/${OWNER}/${REPO}`;
const evaluatorPath = `/repos/${EVALUATOR_REPO}`;

/** GitHub hands out an installation token (Probot asks once per installation and caches it). */
export function mockToken(id = INSTALLATION): void {
  nock(API).post(`/app/installations/${id}/access_tokens`).reply(201, { token: `ghs_test_${id}`, expires_at: "2099-01-01T00:00:00Z", permissions: {} });
}

/** `.github/probegate.yml` on the default branch (or 404 when `yaml` is null). */
export function mockConfig(yaml: string | null = CONFIG_YAML): void {
  const scope = nock(API).get(`${repoPath}/contents/.github%2Fprobegate.yml`).query({ ref: "master" });
  if (yaml === null) scope.reply(404, { message: "Not Found" });
  else scope.reply(200, { type: "file", encoding: "base64", name: "probegate.yml", path: ".github/probegate.yml", content: Buffer.from(yaml).toString("base64") });
}

/** `tasks/<task>/task.yml` in the evaluator repository at the probe-set commit (404 when `yaml` is null). */
export function mockTaskYml(task: string, yaml: string | null): void {
  const scope = nock(API).get(`${evaluatorPath}/contents/tasks%2F${task}%2Ftask.yml`).query({ ref: PROBE_SET });
  if (yaml === null) scope.reply(404, { message: "Not Found" });
  else scope.reply(200, { type: "file", encoding: "base64", name: "task.yml", path: `tasks/${task}/task.yml`, content: Buffer.from(yaml).toString("base64") });
}

/** The evaluator ref resolves to PROBE_SET. */
export function mockProbeSet(): void {
  nock(API).get(`${evaluatorPath}/commits/main`).query({ per_page: "1" }).reply(200, { sha: PROBE_SET });
}

/** The check-run lookup by ref (returning `existing`), then (when `createId` is given) the create; bodies checked against the spec. */
export function mockCheckRunCreate(opts: { sha?: string; createId?: number; existing?: Array<{ id: number; external_id: string; status: string }>; name?: string } = {}): any[] {
  const created: any[] = [];
  nock(API)
    .get(`${repoPath}/commits/${opts.sha ?? HEAD}/check-runs`)
    .query({ check_name: opts.name ?? CHECK_NAME, filter: "all", per_page: "100" })
    .reply(200, { total_count: opts.existing?.length ?? 0, check_runs: opts.existing ?? [] });
  if (opts.createId !== undefined) {
    nock(API)
      .post(`${repoPath}/check-runs`, (b) => assertValidBody("post", "/repos/{owner}/{repo}/check-runs", b) && created.push(b) > 0)
      .reply(201, { id: opts.createId });
  }
  return created;
}

/** The workflow dispatch with run details; its inputs are collected. */
export function mockDispatch(runId: number, status = 200): any[] {
  const bodies: any[] = [];
  nock(API)
    .post(`${evaluatorPath}/actions/workflows/evaluate.yml/dispatches`, (b) => assertValidBody("post", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", b) && bodies.push(b) > 0)
    .reply(status, status === 200 ? { workflow_run_id: runId, run_url: `${API}${evaluatorPath}/actions/runs/${runId}`, html_url: `https://github.com/${EVALUATOR_REPO}/actions/runs/${runId}` } : { message: "Not Found" });
  return bodies;
}

/** `times` PATCHes of a check run, bodies checked and collected. */
export function mockCheckRunUpdate(id: number, times = 1): any[] {
  const bodies: any[] = [];
  nock(API)
    .patch(`${repoPath}/check-runs/${id}`, (b) => assertValidBody("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}", b) && bodies.push(b) > 0)
    .times(times)
    .reply(200, { id });
  return bodies;
}

/** GitHub's side of a rerun asked by `user` up to the permission check: the PR, the config, `permission`. */
export function mockRerunAsk(user: string, permission: string, sha = HEAD): void {
  mockPullGet(sha);
  mockConfig();
  mockPermission(user, permission);
}

/** What an agent PR's event asks GitHub before the check run is made: token, config, probe set, then `createOpts`'s lookup (and create). */
export function mockUntilCheckRun(createOpts: Parameters<typeof mockCheckRunCreate>[0] = {}, token = true, config: string = CONFIG_YAML): any[] {
  if (token) mockToken();
  mockConfig(config);
  mockProbeSet();
  return mockCheckRunCreate(createOpts);
}

/** Everything GitHub sees when an agent PR is opened: config, probe set, check run, dispatch. */
export function mockStart(opts: { checkRunId: number; runId: number; sha?: string; token?: boolean; config?: string }): { created: any[]; dispatched: any[] } {
  const created = mockUntilCheckRun({ sha: opts.sha, createId: opts.checkRunId }, opts.token ?? true, opts.config);
  const dispatched = mockDispatch(opts.runId);
  return { created, dispatched };
}

/** The artifact listing and download of run `runId`. */
export function mockArtifact(runId: number, zip: Uint8Array, artifactId = 555): void {
  nock(API)
    .get(`${evaluatorPath}/actions/runs/${runId}/artifacts`)
    .query({ name: "probegate-result", per_page: "100" })
    .reply(200, { total_count: 1, artifacts: [{ id: artifactId, name: "probegate-result", size_in_bytes: zip.length, expired: false }] })
    .get(`${evaluatorPath}/actions/artifacts/${artifactId}/zip`)
    .reply(200, Buffer.from(zip), { "content-type": "application/zip" });
}

/** `pulls.get` of the example PR at `sha` (and its base at `base`, when the base branch moved on). */
export function mockPullGet(sha = HEAD, base?: string): void {
  const pr = pullRequestPayload().pull_request;
  pr.head.sha = sha;
  if (base) pr.base.sha = base;
  nock(API).get(`${repoPath}/pulls/${PR_NUMBER}`).reply(200, pr);
}

/** GitHub's answer to the collaborator-permission question. */
export function mockPermission(user: string, permission: string): void {
  nock(API).get(`${repoPath}/collaborators/${encodeURIComponent(user)}/permission`).reply(200, { permission, role_name: permission, user: { login: user } });
}

/** The PR's commits, with these messages (for Co-authored-by trailers). */
export function mockCommits(...messages: string[]): void {
  nock(API)
    .get(`${repoPath}/pulls/${PR_NUMBER}/commits`)
    .query({ per_page: "100" })
    .reply(200, messages.map((message, i) => ({ sha: `${i}`.padStart(40, "0"), commit: { message } })));
}

/** The 👀 reaction on comment `commentId`, body checked against the spec. */
export function mockReaction(commentId: number): void {
  nock(API)
    .post(`${repoPath}/issues/comments/${commentId}/reactions`, (b) => assertValidBody("post", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", b) && b.content === "eyes")
    .reply(201, { id: commentId, content: "eyes" });
}

/** A reply comment on the PR thread; its bodies are collected. */
export function mockReply(): any[] {
  const bodies: any[] = [];
  nock(API)
    .post(`${repoPath}/issues/${PR_NUMBER}/comments`, (b) => assertValidBody("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments", b) && bodies.push(b) > 0)
    .reply(201, { id: 1 });
  return bodies;
}

/** Fails the test when a mock was not used, then resets nock. */
export function expectAllMocksUsed(): void {
  const pending = nock.pendingMocks();
  nock.cleanAll();
  expect(pending, "every GitHub mock was used").toEqual([]);
}

/** An app whose evaluation of the example PR finished probe-rejected (check run 61, run 9001). */
export async function finishedApp(config?: string, result: Partial<EvaluationResult> = {}): Promise<LoadedApp> {
  const a = await loadApp();
  mockStart({ checkRunId: 61, runId: 9001, ...(config ? { config } : {}) });
  await deliver(a, "pull_request", pullRequestPayload("opened"));
  mockArtifact(9001, resultZip(signedResult(result)));
  mockCheckRunUpdate(61);
  await deliver(a, "workflow_run", workflowRunPayload(9001));
  expect(getEvaluation(a.db, keyFor())?.state).toBe("completed");
  return a;
}

