import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createNetServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import nock from "nock";
import { createNodeMiddleware, Probot, ProbotOctokit, Server } from "probot";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import probegateApp, { OPS_NOT_SERVED, opsHandler, opsResponder } from "../../src/app/index.js";
import { addToHostServer } from "../../src/app/ops-handler.js";
import { NOT_LOADED } from "../../src/app/ops-routes.js";
import { openStore } from "../../src/store/db.js";
import { tmp } from "../helpers.js";
import { API, mockCommits, mockConfig, mockToken, PRIVATE_KEY, pullRequestPayload, SIGNING_KEY } from "./app-harness.js";

/** The app loaded the ways Probot apps load (issue #40): no server, createNodeMiddleware, Probot's Server. */

const SECRET = "probot-load-test-webhook-secret";
const cleanup: Array<() => Promise<void> | void> = [];
let unexpected: string[] = [];
// Requests nock had no mock for, GitHub's only: the tests' own requests to 127.0.0.1 pass through.
const onNoMatch = (req: { method?: string; hostname?: string; path?: string }) => {
  if (req.hostname !== "127.0.0.1") unexpected.push(`${req.method} ${req.hostname}${req.path}`);
};

beforeEach(() => {
  // The app function reads its settings from the environment, as a Probot host hands them over.
  vi.stubEnv("WEBHOOK_SECRET", SECRET);
  vi.stubEnv("PROBEGATE_SIGNING_KEY", SIGNING_KEY);
  vi.stubEnv("PROBEGATE_DB", join(tmp("pg-load-"), "probegate.sqlite"));
  vi.stubEnv("PROBEGATE_SWEEP_SECONDS", "0");
  unexpected = [];
  nock.emitter.on("no match", onNoMatch);
  nock.disableNetConnect();
  nock.enableNetConnect("127.0.0.1");
});
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
  vi.unstubAllEnvs();
  nock.emitter.removeListener("no match", onNoMatch);
  const pending = nock.pendingMocks();
  nock.cleanAll();
  nock.enableNetConnect();
  expect(pending, "every GitHub mock was used").toEqual([]);
  expect(unexpected, "no request GitHub was not expected to get").toEqual([]);
});

/** A Probot as Probot's testing docs make one: no server, retries and throttling off; `quiet` for tests that expect Probot to log errors. */
function testProbot(quiet = false): Probot {
  return new Probot({ appId: 123, privateKey: PRIVATE_KEY, secret: SECRET, Octokit: ProbotOctokit.defaults({ retry: { enabled: false }, throttle: { enabled: false } }), ...(quiet ? { logLevel: "fatal" as const } : {}) });
}

/** A port free a moment ago: Probot's Server takes `port: 0` for its default, 3000. */
async function freePort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((r) => probe.close(() => r()));
  return port;
}

/** How often the app said its ops routes are not served, on `probot`'s logger. */
async function notServedCount(probot: Probot): Promise<() => number> {
  await probot.ready();
  const warn = vi.spyOn(probot.log, "warn");
  return () => warn.mock.calls.filter((c) => c.includes(OPS_NOT_SERVED)).length;
}

const sign = (body: string, secret = SECRET) => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

describe("probot.load without a server (Probot's testing docs, the serverless adapters)", () => {
  it("loads, says once that the ops routes are not served, and a human's PR writes nothing to GitHub", async () => {
    const probot = testProbot();
    const notServed = await notServedCount(probot);
    const ops = opsResponder(probot);
    // Before the app is loaded the host's routes already answer: alive, not ready.
    expect((await ops("GET", "/healthz"))?.status).toBe(200);
    const early = await ops("GET", "/readyz");
    expect(early?.status).toBe(503);
    expect(JSON.parse(early?.body ?? "")).toEqual({ ready: false, problems: [NOT_LOADED] });

    await probot.load(probegateApp);
    expect(notServed()).toBe(1);

    // Reads only: the token, the repository's config, the PR's commits (no agent trailer).
    mockToken();
    mockConfig();
    mockCommits("Fix the README");
    await probot.receive({ id: "human-1", name: "pull_request", payload: pullRequestPayload("opened", { author: "Codertocat" }) } as Parameters<Probot["receive"]>[0]);
    // A second event: the line is said at load, not per event.
    await probot.receive({ id: "draft-1", name: "pull_request", payload: pullRequestPayload("opened", { draft: true }) } as Parameters<Probot["receive"]>[0]);
    expect(notServed()).toBe(1);

    // After the load the same responder reads the app's store and asks GitHub as the app.
    nock(API).get("/app").matchHeader("authorization", /^bearer ey/i).reply(200, { id: 123 });
    const ready = await ops("GET", "/readyz?verbose=1");
    expect(ready?.status).toBe(200);
    expect(JSON.parse(ready?.body ?? "")).toEqual({ ready: true, problems: [] });
    expect(await ops("POST", "/healthz")).toBeNull();
    expect(await ops("GET", "/api/github/webhooks")).toBeNull();
  });

  it("keeps each load's store to its own Probot: a handler of another Probot sees no app", async () => {
    const loaded = testProbot();
    const other = testProbot();
    await loaded.load(probegateApp);
    nock(API).get("/app").reply(200, { id: 123 });
    expect((await opsResponder(loaded)("GET", "/readyz"))?.status).toBe(200);
    expect(JSON.parse((await opsResponder(other)("GET", "/readyz"))?.body ?? "").problems).toEqual([NOT_LOADED]);
  });

  it("tells a host without a server from other addHandler failures", () => {
    const handler = opsHandler(testProbot());
    expect(addToHostServer({}, handler)).toBe(false);
    expect(addToHostServer({ addHandler: () => { throw new Error("No server instance"); } }, handler)).toBe(false);
    expect(() => addToHostServer({ addHandler: () => { throw new Error("handler list is frozen"); } }, handler)).toThrow("handler list is frozen");
    const added: unknown[] = [];
    expect(addToHostServer({ addHandler: (h) => void added.push(h) }, handler)).toBe(true);
    expect(added).toEqual([handler]);
  });
});

describe("createNodeMiddleware on a plain http server, with the exported ops handler", () => {
  async function serve(): Promise<{ url: string; probot: Probot; notServed: () => number }> {
    // Quiet: the wrongly signed delivery below makes Probot log an error.
    const probot = testProbot(true);
    const notServed = await notServedCount(probot);
    const ops = opsHandler(probot);
    const middleware = await createNodeMiddleware(probegateApp, { probot });
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      void (async () => {
        if (await ops(req, res)) return;
        await middleware(req, res, () => res.writeHead(404).end());
      })();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    cleanup.push(() => new Promise<void>((r) => server.close(() => r())));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, probot, notServed };
  }

  const post = (url: string, body: string, signature: string) =>
    fetch(`${url}/api/github/webhooks`, { method: "POST", body, headers: { "content-type": "application/json", "x-github-event": "pull_request", "x-github-delivery": `d-${signature.slice(7, 15)}`, "x-hub-signature-256": signature } });

  it("handles a delivery signed with the secret, refuses a wrongly signed one, and serves /healthz", async () => {
    const { url, notServed } = await serve();
    // createNodeMiddleware hands the app an addHandler: the host serves the routes, nothing to say.
    expect(notServed()).toBe(0);
    const deliveries = () => {
      const db = openStore(process.env.PROBEGATE_DB as string);
      try {
        return db.prepare("SELECT id FROM deliveries").all();
      } finally {
        db.close();
      }
    };
    // A draft: acted on (recorded) without asking GitHub anything.
    const body = JSON.stringify(pullRequestPayload("opened", { draft: true }));
    const good = await post(url, body, sign(body));
    expect(good.status).toBeGreaterThanOrEqual(200);
    expect(good.status).toBeLessThan(300);
    expect(deliveries()).toHaveLength(1);
    const bad = await post(url, body, sign(body, "not-the-secret"));
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
    expect(deliveries()).toHaveLength(1);

    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
    const metrics = await fetch(`${url}/metrics`);
    expect(await metrics.text()).toContain("probegate_webhook_deliveries_total");
  });
});

describe("Probot's Server (probot run)", () => {
  it("adds the ops routes to the server, as before", async () => {
    const quiet = new Probot({ appId: 1, privateKey: PRIVATE_KEY, logLevel: "fatal" });
    await quiet.ready();
    const server = new Server({ Probot: Probot.defaults({ appId: 123, privateKey: PRIVATE_KEY, secret: SECRET }), log: quiet.log, port: await freePort(), host: "127.0.0.1", enableStaticFiles: false });
    await server.load(probegateApp);
    await server.start();
    cleanup.push(() => server.stop());
    const res = await fetch(`http://127.0.0.1:${server.port}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });
});
