import { createHmac } from "node:crypto";
import fs from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import Database from "better-sqlite3";
import nock from "nock";
import { Probot } from "probot";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createProbegate } from "../../src/app/app.js";
import { InFlight } from "../../src/app/drain.js";
import { createAppMetrics, dispatchTimer, type AppMetrics } from "../../src/app/metrics.js";
import { probegateOctokit } from "../../src/app/octokit.js";
import { cachedCheck, storeWriteProblem } from "../../src/app/ops-routes.js";
import { closeOnSignals, readServerOptions, startServer, webhookServer, type StartedServer } from "../../src/app/server.js";
import { AppSettingsError } from "../../src/app/settings.js";
import { openStore, type StoreDb } from "../../src/store/db.js";
import { getEvaluation } from "../../src/store/evaluations.js";
import { tmp } from "../helpers.js";
import { API, CONFIG_YAML, keyFor, mockCheckRunCreate, mockDispatch, mockProbeSet, mockStart, mockToken, PRIVATE_KEY, pullRequestPayload, SIGNING_KEY } from "./app-harness.js";

const SECRET = "ops-test-webhook-secret";
const cleanup: Array<() => Promise<void> | void> = [];

beforeEach(() => {
  nock.disableNetConnect();
  nock.enableNetConnect("127.0.0.1");
});
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
  const pending = nock.pendingMocks();
  nock.cleanAll();
  nock.enableNetConnect();
  expect(pending, "every GitHub mock was used").toEqual([]);
});

function sign(body: string): string {
  return `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}`;
}

/** Posts a signed delivery (or one with `signature`) to `url`. */
async function post(url: string, name: string, payload: unknown, id: string, signature?: string): Promise<Response> {
  const body = JSON.stringify(payload);
  return fetch(`${url}/api/github/webhooks`, { method: "POST", body, headers: { "content-type": "application/json", "x-github-event": name, "x-github-delivery": id, "x-hub-signature-256": signature ?? sign(body) } });
}

/** The app behind the real server with its own metrics registry, `db`'s store, and a GitHub check through the app's JWT. */
async function serve(db: StoreDb, m: AppMetrics = createAppMetrics()): Promise<{ url: string; m: AppMetrics }> {
  const probot = new Probot({ appId: 123, privateKey: PRIVATE_KEY, secret: SECRET, logLevel: "fatal", Octokit: probegateOctokit({ retry: false, throttle: false }).plugin(dispatchTimer(m)) });
  const github = cachedCheck(async () => {
    await (await probot.auth()).request("GET /app", { request: { retries: 0 } });
  }, 0);
  m.observeStore(db);
  const probegate = createProbegate({ db, signingKey: SIGNING_KEY, sweepEveryMs: 0 });
  const server: Server = await webhookServer(probot, probegate, undefined, null, { ops: { metrics: m, db, github, draining: () => false }, inFlight: new InFlight(), metrics: m });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanup.push(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, m };
}

function store(): StoreDb {
  const db = openStore(join(tmp("pg-ops-"), "probegate.sqlite"));
  cleanup.push(() => {
    if (db.open) db.close();
  });
  return db;
}

describe("health and readiness", () => {
  it("/healthz answers while the process serves, and /readyz when the store is writable and GitHub answers GET /app", async () => {
    const { url } = await serve(store());
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: "ok" });
    nock(API).get("/app").matchHeader("authorization", /^bearer ey/i).reply(200, { id: 123, slug: "probegate" });
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true, problems: [] });
  });

  it("/readyz is 503 naming GitHub when GitHub does not answer", async () => {
    const { url } = await serve(store());
    nock(API).get("/app").reply(503, { message: "Service Unavailable" });
    const down = await fetch(`${url}/readyz`);
    expect(down.status).toBe(503);
    expect((await down.json()).problems).toEqual([expect.stringMatching(/^GitHub did not answer the app \(HTTP 503: /)]);
    nock(API).get("/app").replyWithError("connect ECONNREFUSED 140.82.112.6:443");
    const unreachable = await fetch(`${url}/readyz`);
    expect(unreachable.status).toBe(503);
    expect((await unreachable.json()).problems[0]).toContain("ECONNREFUSED");
  });

  it("/readyz is 503 naming the store when it cannot be written", async () => {
    const file = join(tmp("pg-ops-ro-"), "probegate.sqlite");
    openStore(file).close();
    // What a file system remounted read-only does to the app's connection.
    const readOnly = new Database(file, { readonly: true });
    cleanup.push(() => void readOnly.close());
    expect(storeWriteProblem(readOnly)).toMatch(/^the store .*probegate\.sqlite cannot be written \(SQLITE_READONLY: attempt to write a readonly database\)$/);
    const { url } = await serve(readOnly);
    nock(API).get("/app").reply(200, { id: 123 });
    const res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(503);
    expect((await res.json()).problems).toEqual([expect.stringContaining("cannot be written (SQLITE_READONLY")]);
    // A full disk: the folder's free space is checked too.
    const writable = store();
    expect(storeWriteProblem(writable, () => ({ bavail: 10, bsize: 4096 }))).toMatch(/has 0 MiB free \(at least 64 MiB needed\)$/);
    expect(storeWriteProblem(writable)).toBeNull();
    // The probe leaves nothing behind.
    expect(writable.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'probegate_readyz%'").all()).toEqual([]);
  });

  it("asks GitHub at most once per cache period, sharing the answer", async () => {
    let t = 0;
    let calls = 0;
    const check = cachedCheck(
      async () => {
        calls += 1;
        if (calls === 2) throw Object.assign(new Error("Bad credentials"), { status: 401 });
      },
      5000,
      () => t,
    );
    expect(await Promise.all([check(), check()])).toEqual([null, null]);
    t = 4999;
    expect(await check()).toBeNull();
    t = 5000;
    expect(await check()).toBe("GitHub did not answer the app (HTTP 401: Bad credentials)");
    expect(calls).toBe(2);
  });
});

describe("metrics", () => {
  it("counts deliveries by event and outcome, evaluations by state and the dispatch's duration", async () => {
    const db = store();
    const { url } = await serve(db);
    mockStart({ checkRunId: 71, runId: 9101 });
    expect((await post(url, "pull_request", pullRequestPayload("opened"), "d-metrics-1")).status).toBe(200);
    expect(getEvaluation(db, keyFor())?.state).toBe("dispatched");
    expect((await post(url, "pull_request", pullRequestPayload("opened"), "d-metrics-bad", "sha256=0000")).status).toBe(400);
    const res = await fetch(`${url}/metrics`);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    expect(text).toContain('probegate_webhook_deliveries_total{event="pull_request.opened",outcome="handled"} 1');
    expect(text).toContain('probegate_webhook_deliveries_total{event="unverified",outcome="rejected"} 1');
    expect(text).toContain('probegate_evaluations{state="dispatched"} 1');
    expect(text).toContain('probegate_dispatch_duration_seconds_count{outcome="ok"} 1');
    expect(text).toContain("# TYPE probegate_reconcile_actions_total counter");
  });

  it("counts a delivery whose handler failed, and keeps a state that emptied at 0", async () => {
    const db = store();
    const { url, m } = await serve(db);
    mockToken();
    nock(API).get("/repos/Codertocat/Hello-World/contents/.github%2Fprobegate.yml").query(true).reply(500, { message: "boom" });
    expect((await post(url, "pull_request", pullRequestPayload("opened"), "d-metrics-fail")).status).toBe(500);
    db.prepare("INSERT INTO evaluations (key, owner, repo, head_sha, task, probe_set, state, created_at, updated_at, attempt_started_at) VALUES ('k', 'o', 'r', 'abc', 't', 'p', 'queued', 0, 0, 0)").run();
    expect(await m.registry.getSingleMetricAsString("probegate_evaluations")).toContain('probegate_evaluations{state="queued"} 1');
    db.prepare("UPDATE evaluations SET state = 'error'").run();
    const after = await m.registry.getSingleMetricAsString("probegate_evaluations");
    expect(after).toContain('probegate_evaluations{state="queued"} 0');
    expect(after).toContain('probegate_evaluations{state="error"} 1');
    m.reconcileActions.inc({ action: "completed" });
    const text = await (await fetch(`${url}/metrics`)).text();
    expect(text).toContain('probegate_webhook_deliveries_total{event="pull_request.opened",outcome="failed"} 1');
    expect(text).toContain('probegate_reconcile_actions_total{action="completed"} 1');
  });
});

const ENV = { APP_ID: "123", PRIVATE_KEY, WEBHOOK_SECRET: SECRET, PROBEGATE_SIGNING_KEY: SIGNING_KEY, PORT: "0", HOST: "127.0.0.1", PROBEGATE_SWEEP_SECONDS: "0" };

async function start(env: Record<string, string> = {}): Promise<{ started: StartedServer; file: string }> {
  const dir = tmp("pg-start-ops-");
  const file = join(dir, "pg.sqlite");
  const started = await startServer({ ...ENV, LOG_LEVEL: "fatal", PROBEGATE_DB: file, ...env }, dir, createAppMetrics());
  cleanup.push(async () => void (await started.close({ deadlineMs: 0 })));
  return { started, file };
}

describe("logs", () => {
  it("are JSON lines on stdout with LOG_FORMAT=json (a new Probot ignored it before)", async () => {
    const written: string[] = [];
    const real = { write: fs.write, writeSync: fs.writeSync };
    // pino writes to fd 1 through sonic-boom, which calls fs.write / fs.writeSync: catch what goes to stdout.
    const capture = (data: unknown) => written.push(Buffer.isBuffer(data) ? data.toString("utf8") : String(data));
    (fs as any).write = (fd: number, data: unknown, ...rest: any[]) => {
      if (fd !== 1) return (real.write as any)(fd, data, ...rest);
      capture(data);
      const cb = rest.find((r) => typeof r === "function");
      const n = Buffer.byteLength(Buffer.isBuffer(data) ? data : String(data));
      setImmediate(() => cb?.(null, n));
    };
    (fs as any).writeSync = (fd: number, data: unknown, ...rest: any[]) => {
      if (fd !== 1) return (real.writeSync as any)(fd, data, ...rest);
      capture(data);
      return Buffer.byteLength(Buffer.isBuffer(data) ? data : String(data));
    };
    try {
      const { started } = await start({ LOG_FORMAT: "json", LOG_LEVEL: "info", LOG_LEVEL_IN_STRING: "true" });
      await new Promise((r) => setTimeout(r, 200));
      const lines = written.join("").split("\n").filter(Boolean);
      const listening = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((o) => String(o.msg).startsWith("probegate listening on"));
      expect(listening).toMatchObject({ level: "info", name: "probot" });
      expect(listening?.msg).toMatch(new RegExp(`^probegate listening on ${started.url}/api/github/webhooks, store /.*pg\\.sqlite$`));
    } finally {
      (fs as any).write = real.write;
      (fs as any).writeSync = real.writeSync;
    }
    expect(() => readServerOptions({ LOG_FORMAT: "xml" } as unknown as NodeJS.ProcessEnv)).toThrow(AppSettingsError);
    expect(() => readServerOptions({ LOG_FORMAT: "xml" } as unknown as NodeJS.ProcessEnv)).toThrow(/LOG_FORMAT must be json \(one JSON object a line, for a log collector\) or pretty/);
    expect(readServerOptions({}).log.logFormat).toBe("pretty");
  });
});

describe("shutdown", () => {
  it("on SIGTERM stops accepting, lets a slow handler finish, then closes the store and exits 0", async () => {
    const { started, file } = await start({ PROBEGATE_DRAIN_SECONDS: "20" });
    // As mockStart, but the config read is slow: the handler is in flight when SIGTERM comes.
    mockToken();
    mockConfigSlowly(1500);
    mockProbeSet();
    mockCheckRunCreate({ createId: 81 });
    mockDispatch(9201);
    const delivery = post(started.url, "pull_request", pullRequestPayload("opened"), "d-drain-1");
    await until(() => started.inFlight.size === 1);
    const codes: number[] = [];
    const off = closeOnSignals(started, (c) => void codes.push(c));
    cleanup.push(off);
    process.emit("SIGTERM", "SIGTERM");
    await until(() => !started.server.listening);
    // Stopped accepting: a new connection is refused while the handler still runs.
    await expect(fetch(`${started.url}/healthz`)).rejects.toThrow();
    expect(started.inFlight.size).toBe(1);
    expect((await delivery).status).toBe(200);
    await until(() => codes.length > 0, 10_000);
    expect(codes).toEqual([0]);
    const db = openStore(file);
    expect(getEvaluation(db, keyFor())?.state).toBe("dispatched");
    db.close();
  });

  it("gives up on a handler past the deadline, names it, and exits 1", async () => {
    const { started } = await start();
    mockToken();
    mockConfigSlowly(3000);
    const delivery = post(started.url, "pull_request", pullRequestPayload("opened"), "d-drain-late").catch((e: Error) => e);
    await until(() => started.inFlight.size === 1);
    const t0 = Date.now();
    const left = await started.close({ deadlineMs: 300 });
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(left).toEqual([{ id: "d-drain-late", event: "pull_request.opened" }]);
    // The cut connection fails on the client's side; GitHub counts that delivery as failed.
    expect(await delivery).toBeInstanceOf(Error);
    await new Promise((r) => setTimeout(r, 3000));
  });
});

function mockConfigSlowly(ms: number): void {
  nock(API)
    .get("/repos/Codertocat/Hello-World/contents/.github%2Fprobegate.yml")
    .query({ ref: "master" })
    .delay(ms)
    .reply(200, { type: "file", encoding: "base64", name: "probegate.yml", path: ".github/probegate.yml", content: Buffer.from(CONFIG_YAML).toString("base64") });
}

async function until(ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 10));
  }
}
