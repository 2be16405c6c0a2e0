import { spawnSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { existsSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Probot } from "probot";
import { afterEach, describe, expect, it } from "vitest";
import { createProbegate } from "../../src/app/app.js";
import { probegateOctokit } from "../../src/app/octokit.js";
import { webhookServer } from "../../src/app/server.js";
import { AppSettingsError, readAppSettings } from "../../src/app/settings.js";
import { openStore, type StoreDb } from "../../src/store/db.js";
import { listPendingEvaluations } from "../../src/store/evaluations.js";
import { ROOT, tmp } from "../helpers.js";
import { PRIVATE_KEY, pullRequestPayload, SIGNING_KEY } from "./app-harness.js";

const VECTOR_SECRET = "It's a Secret to Everybody";
const VECTOR_BODY = "Hello, World!";
const VECTOR_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

const open: Array<{ server: Server; db: StoreDb }> = [];
afterEach(async () => {
  for (const o of open.splice(0)) {
    await new Promise((r) => o.server.close(r));
    o.db.close();
  }
});

/** The app behind Probot's real webhook middleware on a local port, with `secret`. */
async function serve(secret: string): Promise<{ url: string; db: StoreDb }> {
  const db = openStore(join(tmp("pg-http-"), "probegate.sqlite"));
  const probot = new Probot({ appId: 123, privateKey: PRIVATE_KEY, secret, logLevel: "fatal", Octokit: probegateOctokit({ retry: false, throttle: false }) });
  const server = await webhookServer(probot, createProbegate({ db, signingKey: SIGNING_KEY, sweepEveryMs: 0 }));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  open.push({ server, db });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/github/webhooks`, db };
}

function sign(secret: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

async function post(url: string, body: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { method: "POST", body, headers: { "content-type": "application/json", "x-github-event": "pull_request", "x-github-delivery": "d-http", ...headers } });
  return { status: res.status, text: await res.text() };
}

const deliveries = (db: StoreDb) => (db.prepare("SELECT COUNT(*) AS n FROM deliveries").get() as { n: number }).n;

describe("webhook signatures, through Probot's HTTP middleware", () => {
  const secret = "probegate-http-test-secret";
  // A draft PR: a correctly signed delivery is recorded and asks GitHub nothing.
  const body = JSON.stringify(pullRequestPayload("opened", { draft: true }));

  it("accepts a correctly signed delivery and records it", async () => {
    const { url, db } = await serve(secret);
    const res = await post(url, body, { "x-hub-signature-256": sign(secret, body) });
    expect(res.status).toBe(200);
    expect(deliveries(db)).toBe(1);
  });

  it.each([
    ["a missing signature", () => ({})],
    ["a wrong signature", () => ({ "x-hub-signature-256": sign("not-the-secret", body) })],
    ["a mis-sized signature", () => ({ "x-hub-signature-256": sign(secret, body).slice(0, 40) })],
    ["a signature without its sha256= prefix", () => ({ "x-hub-signature-256": sign(secret, body).slice(7) })],
  ])("answers 4xx to %s and queues nothing", async (_what, headers) => {
    const { url, db } = await serve(secret);
    const res = await post(url, body, headers());
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(deliveries(db)).toBe(0);
    expect(listPendingEvaluations(db)).toEqual([]);
  });

  it("answers 4xx to a body changed by one byte after signing, and queues nothing", async () => {
    const { url, db } = await serve(secret);
    const signature = sign(secret, body);
    const i = body.indexOf('"draft":true');
    const changed = `${body.slice(0, i)}"draft":trUe${body.slice(i + 12)}`;
    expect(changed.length).toBe(body.length);
    const res = await post(url, changed, { "x-hub-signature-256": signature });
    expect(res.status).toBe(400);
    expect(res.text).toContain("signature does not match");
    expect(deliveries(db)).toBe(0);
  });

  it("checks GitHub's published test vector the same way", async () => {
    expect(sign(VECTOR_SECRET, VECTOR_BODY)).toBe(VECTOR_SIGNATURE);
    const { url, db } = await serve(VECTOR_SECRET);
    // The signature passes; the body is then refused for not being a JSON event.
    const good = await post(url, VECTOR_BODY, { "x-hub-signature-256": VECTOR_SIGNATURE });
    expect(good.status).toBe(400);
    expect(good.text).toContain("Invalid JSON");
    expect(good.text).not.toContain("signature");
    const bad = await post(url, "Hello, World?", { "x-hub-signature-256": VECTOR_SIGNATURE });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("signature does not match");
    expect(deliveries(db)).toBe(0);
  });
});

describe("starting the app", () => {
  it("refuses to start without a webhook secret, or with Probot's placeholder, naming the variable", () => {
    const base = { PROBEGATE_SIGNING_KEY: SIGNING_KEY };
    expect(() => readAppSettings(base, "/srv")).toThrow(AppSettingsError);
    expect(() => readAppSettings(base, "/srv")).toThrow(/WEBHOOK_SECRET is not set/);
    expect(() => readAppSettings({ ...base, WEBHOOK_SECRET: "development" }, "/srv")).toThrow(/WEBHOOK_SECRET is Probot's placeholder/);
    expect(() => readAppSettings({ WEBHOOK_SECRET: "s3cret" }, "/srv")).toThrow(/PROBEGATE_SIGNING_KEY is not set/);
    expect(() => readAppSettings({ ...base, WEBHOOK_SECRET: "s3cret", PROBEGATE_EVALUATOR: "nope" }, "/srv")).toThrow(/PROBEGATE_EVALUATOR must be owner\/repo:workflow-file/);
    expect(readAppSettings({ ...base, WEBHOOK_SECRET: "s3cret", PROBEGATE_EVALUATOR: "o/e:evaluate.yml" }, "/srv")).toMatchObject({
      dbFile: "/srv/probegate.sqlite",
      defaultEvaluator: { repository: "o/e", workflow: "evaluate.yml", ref: "main" },
      defaultTimeoutS: 7200,
    });
  });

  const DIST = join(ROOT, "dist", "app", "index.js");
  it("`npm start` (the committed bundle) exits 1 with a clear message when WEBHOOK_SECRET is unset", () => {
    expect(existsSync(DIST), "dist/app/index.js is built").toBe(true);
    const env = { PATH: process.env.PATH ?? "", APP_ID: "123", PRIVATE_KEY, PROBEGATE_SIGNING_KEY: SIGNING_KEY };
    const r = spawnSync(process.execPath, [join(ROOT, "scripts", "start-app.mjs")], { env, encoding: "utf8", timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("WEBHOOK_SECRET is not set");
  });

  it("the bundle's default export is the Probot app function, configured from the environment", async () => {
    const dist = (await import(/* @vite-ignore */ pathToFileURL(DIST).href)) as typeof import("../../src/app/index.js");
    const dir = tmp("pg-default-");
    const saved = { ...process.env };
    Object.assign(process.env, { WEBHOOK_SECRET: "s3cret-default", PROBEGATE_SIGNING_KEY: SIGNING_KEY, PROBEGATE_SWEEP_SECONDS: "0" });
    delete process.env.PROBEGATE_DB;
    let db: StoreDb | undefined;
    try {
      const probot = new Probot({ appId: 123, privateKey: PRIVATE_KEY, logLevel: "fatal" });
      await probot.load(dist.default, { cwd: dir, addHandler: () => undefined });
      await probot.receive({ id: "default-export", name: "pull_request", payload: pullRequestPayload("opened", { draft: true }) } as Parameters<Probot["receive"]>[0]);
      db = dist.openStore(join(dir, "probegate.sqlite"));
      expect(db.prepare("SELECT id, event FROM deliveries").all()).toEqual([{ id: "default-export", event: "pull_request.opened" }]);
      delete process.env.WEBHOOK_SECRET;
      await expect(probot.load(dist.default, { cwd: dir, addHandler: () => undefined })).rejects.toThrow(/WEBHOOK_SECRET is not set/);
    } finally {
      db?.close();
      process.env = saved;
    }
  });

  it("the committed bundle starts a server with its bundled SQLite and refuses unsigned webhooks", async () => {
    const dist = (await import(/* @vite-ignore */ pathToFileURL(DIST).href)) as typeof import("../../src/app/index.js");
    expect(typeof dist.default).toBe("function");
    const dir = tmp("pg-start-");
    const started = await dist.startServer(
      { APP_ID: "123", PRIVATE_KEY, WEBHOOK_SECRET: "s3cret-for-start", PROBEGATE_SIGNING_KEY: SIGNING_KEY, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "fatal", PROBEGATE_DB: join(dir, "pg.sqlite") },
      dir,
    );
    try {
      const res = await post(`${started.url}/api/github/webhooks`, "{}", {});
      expect(res.status).toBe(400);
      expect(existsSync(join(dir, "pg.sqlite"))).toBe(true);
    } finally {
      await started.close();
    }
  });
});
