import { join } from "node:path";
import { Probot, type Logger } from "probot";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createProbegate, type Probegate } from "../../src/app/app.js";
import { probegateOctokit } from "../../src/app/octokit.js";
import { openStore, type StoreDb } from "../../src/store/db.js";
import { recordDelivery, seen } from "../../src/store/deliveries.js";
import { tmp } from "../helpers.js";
import { Clock, PRIVATE_KEY, SIGNING_KEY, useAppTests } from "./app-harness.js";

useAppTests();

const DAY_MS = 24 * 3600_000;
const running: Array<{ probegate: Probegate; db: StoreDb }> = [];
afterEach(() => {
  for (const r of running.splice(0)) {
    r.probegate.stop();
    r.db.close();
  }
});

/**
 * The app with its sweep timer on (every 10 ms) and its info log captured, loaded on a store that
 * `seed` filled first (the first tick may come at once); nothing is pending, so the sweep asks GitHub nothing.
 */
async function withTimer(seed: (db: StoreDb, clock: Clock) => void, retentionMs?: number): Promise<{ db: StoreDb; clock: Clock; infos: string[] }> {
  const db = openStore(join(tmp("pg-prune-"), "probegate.sqlite"));
  const clock = new Clock();
  seed(db, clock);
  const infos: string[] = [];
  const noop = () => undefined;
  // A logger that keeps the info lines (Probot hands its children to the app as `probot.log`).
  const log = {
    level: "info",
    trace: noop,
    debug: noop,
    info: (...args: unknown[]) => void infos.push(...args.filter((a): a is string => typeof a === "string")),
    warn: noop,
    error: noop,
    fatal: noop,
    child: () => log,
  };
  const probot = new Probot({ appId: 123, privateKey: PRIVATE_KEY, secret: "test-webhook-secret", log: log as unknown as Logger, Octokit: probegateOctokit({ retry: false, throttle: false }) });
  const probegate = createProbegate({ db, signingKey: SIGNING_KEY, now: clock.now, sweepEveryMs: 10, ...(retentionMs ? { deliveryRetentionMs: retentionMs } : {}) });
  running.push({ probegate, db });
  await probot.load(probegate.app);
  await probegate.resumed();
  return { db, clock, infos };
}

const ago = (clock: Clock, days: number) => new Date(clock.t - days * DAY_MS);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("delivery pruning on the sweep timer", () => {
  it("forgets deliveries past 7 days on the first tick, logs how many, then waits an hour before pruning again", async () => {
    const { db: store, clock, infos } = await withTimer((s, c) => {
      recordDelivery(s, { id: "eight-days", event: "pull_request.opened" }, ago(c, 8));
      recordDelivery(s, { id: "six-days", event: "pull_request.opened" }, ago(c, 6));
    });
    await vi.waitFor(() => expect(seen(store, "eight-days")).toBe(false));
    expect(seen(store, "six-days")).toBe(true);
    expect(infos).toContain(`pruned 1 webhook deliveries received before ${ago(clock, 7).toISOString()}`);

    // Within the hour: the timer ticks on, but leaves the store alone.
    recordDelivery(store, { id: "nine-days", event: "issue_comment.created" }, ago(clock, 9));
    await sleep(100);
    expect(seen(store, "nine-days")).toBe(true);
    clock.advance(61);
    await vi.waitFor(() => expect(seen(store, "nine-days")).toBe(false));
    expect(seen(store, "six-days")).toBe(true);
  });

  it("keeps deliveries for the retention it is given", async () => {
    const { db } = await withTimer((s, c) => {
      recordDelivery(s, { id: "eight-days", event: "pull_request.opened" }, ago(c, 8));
      recordDelivery(s, { id: "forty-days", event: "pull_request.opened" }, ago(c, 40));
    }, 30 * DAY_MS);
    await vi.waitFor(() => expect(seen(db, "forty-days")).toBe(false));
    expect(seen(db, "eight-days")).toBe(true);
  });

  it("refuses a retention shorter than GitHub's 3-day redelivery window", () => {
    const db = openStore(":memory:");
    running.push({ probegate: { stop: () => undefined } as Probegate, db });
    expect(() => createProbegate({ db, signingKey: SIGNING_KEY, deliveryRetentionMs: 2 * DAY_MS })).toThrow(
      /deliveryRetentionMs is 172800000; it must be at least 259200000 \(3 days: GitHub can redeliver a webhook for 3 days\)/,
    );
  });
});
