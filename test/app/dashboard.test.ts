import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Probot } from "probot";
import { afterEach, describe, expect, it } from "vitest";
import { createProbegate } from "../../src/app/app.js";
import { authorized, DASHBOARD_PATH, filterOf } from "../../src/app/dashboard.js";
import { probegateOctokit } from "../../src/app/octokit.js";
import { webhookServer } from "../../src/app/server.js";
import { readAppSettings } from "../../src/app/settings.js";
import { openStore, type StoreDb } from "../../src/store/db.js";
import { insertOrGetEvaluation, transitionEvaluation } from "../../src/store/evaluations.js";
import { tmp } from "../helpers.js";
import { at, newEvaluation } from "../store/store-helpers.js";
import { PRIVATE_KEY, SIGNING_KEY } from "./app-harness.js";

const TOKEN = "dashboard-token-0123456789";
const basic = (password: string, user = "octo") => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

const open: Array<{ server: Server; db: StoreDb }> = [];
afterEach(async () => {
  for (const o of open.splice(0)) {
    await new Promise((r) => o.server.close(r));
    o.db.close();
  }
});

/** The app's HTTP server with a store holding two finished evaluations. */
async function serve(token: string | null): Promise<string> {
  const db = openStore(join(tmp("pg-dash-"), "probegate.sqlite"));
  const finish = (pr: number, agent: string, verdict: "resolved" | "probe-rejected") => {
    const e = insertOrGetEvaluation(db, newEvaluation({ pr, agent, headSha: String(pr).repeat(40) }), at(pr)).evaluation;
    transitionEvaluation(db, e.key, "dispatch", { now: at(pr + 1) });
    transitionEvaluation(db, e.key, "complete", { now: at(pr + 2), patch: { verdict } });
  };
  finish(1, "codex", "probe-rejected");
  finish(2, "claude", "resolved");
  const probot = new Probot({ appId: 123, privateKey: PRIVATE_KEY, secret: "dashboard-test-secret", logLevel: "fatal", Octokit: probegateOctokit({ retry: false, throttle: false }) });
  const server = await webhookServer(probot, createProbegate({ db, signingKey: SIGNING_KEY, sweepEveryMs: 0 }), undefined, { db, token, now: () => at(60) });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  open.push({ server, db });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("the scorecard dashboard route", () => {
  it("serves the HTML page with charts and the JSON to the token holder", async () => {
    const base = await serve(TOKEN);
    const page = await fetch(`${base}${DASHBOARD_PATH}`, { headers: { authorization: basic(TOKEN) } });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await page.text();
    expect(html).toContain("Chart.js v4.5.1");
    expect(html).toContain("generated 2026-12-02T11:00:00.000Z");
    // The drill-down links each evaluation to its PR.
    expect(html).toContain('<a href="https://github.com/octo/gpu-lib/pull/1">octo/gpu-lib#1</a>');
    const json = await (await fetch(`${base}${DASHBOARD_PATH}.json?basis=all&repo=octo/gpu-lib`, { headers: { authorization: basic(TOKEN) } })).json();
    expect(json.scope).toBe("octo/gpu-lib");
    expect(json.total.figures.evaluations).toBe(2);
    expect(json.total.figures.probeRejection).toMatchObject({ k: 1, n: 2, fewerThanMin: true });
    expect(json.agents.map((a: { agent: string }) => a.agent)).toEqual(["claude", "codex"]);
  });

  it("asks for the token, refuses a wrong one, and is off without one", async () => {
    const base = await serve(TOKEN);
    const none = await fetch(`${base}${DASHBOARD_PATH}`);
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toContain("Basic");
    expect((await fetch(`${base}${DASHBOARD_PATH}`, { headers: { authorization: basic("wrong-token-0123456789") } })).status).toBe(401);
    expect((await fetch(`${base}${DASHBOARD_PATH}`, { method: "POST", headers: { authorization: basic(TOKEN) } })).status).toBe(405);
    const bad = await fetch(`${base}${DASHBOARD_PATH}?basis=best`, { headers: { authorization: basic(TOKEN) } });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("basis 'best': expected first-attempt, best-of-n or all");
    const off = await serve(null);
    const res = await fetch(`${off}${DASHBOARD_PATH}`, { headers: { authorization: basic(TOKEN) } });
    expect(res.status).toBe(404);
    expect(await res.text()).toContain("set PROBEGATE_DASHBOARD_TOKEN");
  });

  it("leaves every other path to the webhook middleware", async () => {
    const base = await serve(TOKEN);
    const hook = await fetch(`${base}/api/github/webhooks`, { method: "POST", body: "{}", headers: { "content-type": "application/json", "x-github-event": "ping", "x-github-delivery": "d1" } });
    expect(hook.status).toBe(400); // unsigned
    expect((await fetch(`${base}/elsewhere`)).status).toBe(404);
  });

  it("checks credentials and filters as pure functions", () => {
    expect(authorized(basic(TOKEN), TOKEN)).toBe(true);
    expect(authorized(basic(TOKEN, ""), TOKEN)).toBe(true);
    expect(authorized(basic(`${TOKEN}x`), TOKEN)).toBe(false);
    expect(authorized(`Bearer ${TOKEN}`, TOKEN)).toBe(false);
    expect(authorized(undefined, TOKEN)).toBe(false);
    expect(filterOf(new URLSearchParams("repo=a/b/c"))).toContain("expected OWNER or OWNER/NAME");
    expect(filterOf(new URLSearchParams("since=yesterday"))).toContain("expected a date");
    expect(filterOf(new URLSearchParams("basis=best-of-n&repo=octo&since=2026-11-01"))).toEqual({ basis: "best-of-n", owner: "octo", since: new Date("2026-11-01") });
  });

  it("takes its token from PROBEGATE_DASHBOARD_TOKEN, at least 16 characters", () => {
    const env = { WEBHOOK_SECRET: "s3cret-for-tests", PROBEGATE_SIGNING_KEY: SIGNING_KEY };
    expect(readAppSettings(env, "/w").dashboardToken).toBeNull();
    expect(readAppSettings({ ...env, PROBEGATE_DASHBOARD_TOKEN: TOKEN }, "/w").dashboardToken).toBe(TOKEN);
    expect(() => readAppSettings({ ...env, PROBEGATE_DASHBOARD_TOKEN: "short" }, "/w")).toThrow(/PROBEGATE_DASHBOARD_TOKEN must be at least 16 characters/);
  });
});
