import { describe, expect, it } from "vitest";
import { MedianSketch, EXACT_LIMIT } from "../../../src/core/median-sketch.js";
import { buildScorecard, categoryMask, NO_AGENT, parseScorecardFilter, UNKNOWN_AREA, weekOf, type ScorecardFact } from "../../../src/core/scorecard/scorecard.js";
import { formatRate, rateOf, wilsonInterval } from "../../../src/core/wilson.js";

const DAY = 86_400_000;
const MON = Date.UTC(2026, 10, 30); // Monday 2026-11-30

/** One finished attempt that is its group's only one (first and best), unless told otherwise. */
const f = (agent: string | null, verdict: ScorecardFact["verdict"], over: Partial<ScorecardFact> = {}): ScorecardFact => ({
  agent,
  owner: "octo",
  repo: "gpu-lib",
  task: "sharded-optimizer",
  area: "training",
  verdict,
  finishedAt: MON + DAY,
  groupFirstAt: over.finishedAt ?? MON + DAY,
  first: true,
  best: true,
  failedMask: 0,
  durationS: 60,
  gpuSeconds: 120,
  ...over,
});
const many = (n: number, agent: string | null, verdict: ScorecardFact["verdict"], over: Partial<ScorecardFact> = {}) => Array.from({ length: n }, () => f(agent, verdict, over));

describe("wilsonInterval", () => {
  it("matches hand-computed 95% intervals, exact at 0 and at 100%", () => {
    // 0/10: upper end (z²/2n + z·√(z²/4n²)) / (1 + z²/n) = 0.2775; 10/10 mirrors it.
    expect(wilsonInterval(0, 10)).toEqual({ low: 0, high: expect.closeTo(0.2775, 4) });
    expect(wilsonInterval(10, 10)).toEqual({ low: expect.closeTo(0.7225, 4), high: 1 });
    const half = wilsonInterval(5, 10);
    expect(half.low).toBeCloseTo(0.2366, 4);
    expect(half.high).toBeCloseTo(0.7634, 4);
    expect(wilsonInterval(1, 1)).toEqual({ low: expect.closeTo(0.2065, 4), high: 1 });
    expect(() => wilsonInterval(3, 2)).toThrow(/0 <= k <= n/);
  });

  it("shows a rate over fewer than 5 as a count, never a bare percentage", () => {
    expect(formatRate(rateOf(2, 3))).toBe("2/3 (too few to rate)");
    expect(formatRate(rateOf(2, 3), { compact: true })).toBe("2/3 n<5");
    expect(formatRate(rateOf(0, 0))).toBe("–");
    expect(formatRate(rateOf(5, 10))).toBe("50% (5/10, 95% CI 24–76%)");
    expect(formatRate(rateOf(0, 10), { compact: true })).toBe("0% [0–28] 0/10");
  });
});

describe("MedianSketch", () => {
  it("is exact while small and within 0.5% once it buckets", () => {
    const s = new MedianSketch();
    expect(s.median()).toBeNull();
    for (const x of [5, 1, 3, 2]) s.add(x);
    expect(s.median()).toBe(2.5);
    expect(s.exact).toBe(true);
    const big = new MedianSketch();
    for (let i = 1; i <= EXACT_LIMIT * 5 + 1; i++) big.add(i / 10);
    expect(big.exact).toBe(false);
    const truth = (EXACT_LIMIT * 5 + 2) / 20;
    expect(Math.abs((big.median() as number) - truth) / truth).toBeLessThan(0.005);
  });
});

describe("buildScorecard", () => {
  it("has nothing to rate on empty data", () => {
    const card = buildScorecard([], "first-attempt");
    expect(card.agents).toEqual([]);
    expect(card.total.figures.evaluations).toBe(0);
    expect(card.total.figures.resolved).toEqual({ k: 0, n: 0, rate: null, low: null, high: null, fewerThanMin: true });
    expect(card.total.figures.medianDurationS).toBeNull();
    expect(card.keys).toEqual({ repository: [], task: [], area: [], week: [] });
  });

  it("computes every figure of one agent from a hand-counted fixture", () => {
    const memory = categoryMask(["memory"]);
    const facts = [
      ...many(3, "codex", "resolved", { durationS: 10, gpuSeconds: 60 }),
      f("codex", "probe-rejected", { failedMask: memory | categoryMask(["traffic"]), durationS: 20, gpuSeconds: 120 }),
      f("codex", "probe-rejected", { failedMask: memory, durationS: 40, gpuSeconds: 0, task: "paged-kv-cache", area: "inference" }),
      f("codex", "official-failed", { durationS: 30, gpuSeconds: 60, finishedAt: MON + 8 * DAY }),
      f("codex", "error", { durationS: null, gpuSeconds: null }),
    ];
    const card = buildScorecard(facts, "first-attempt");
    expect(card.agents.map((a) => a.agent)).toEqual(["codex"]);
    const c = card.agents[0]!.figures;
    expect(c.evaluations).toBe(7);
    expect(c.verdicts).toEqual({ resolved: 3, "probe-rejected": 2, "official-failed": 1, error: 1 });
    // Judged: 6 (the error judged nothing). Passed official: 5. Caught by probes: 2 of those 5.
    expect(c.resolved).toMatchObject({ k: 3, n: 6, rate: 0.5 });
    expect(c.officialPass).toMatchObject({ k: 5, n: 6 });
    expect(c.probeRejection).toMatchObject({ k: 2, n: 5, rate: 0.4, fewerThanMin: false });
    expect(c.probeRejection.low).toBeCloseTo(0.1176, 4);
    expect(c.probeRejection.high).toBeCloseTo(0.7693, 4);
    expect(c.failedCategories).toEqual({ structure: 0, state: 0, functional: 0, memory: 2, time: 0, traffic: 1 });
    // Durations 10, 10, 10, 20, 40, 30: median of six = (10 + 20) / 2; GPU 60·3 + 120 + 0 + 60 s.
    expect(c.medianDurationS).toBe(15);
    expect(c.timed).toBe(6);
    expect(c.gpuMinutes).toBe(6);
    const byTask = Object.fromEntries(card.agents[0]!.by.task.map((s) => [s.key, s.figures.evaluations]));
    expect(byTask).toEqual({ "paged-kv-cache": 1, "sharded-optimizer": 6 });
    expect(card.agents[0]!.by.area.map((s) => s.key)).toEqual(["inference", "training"]);
    expect(card.agents[0]!.by.week.map((s) => [s.key, s.figures.evaluations])).toEqual([
      ["2026-11-30", 6],
      ["2026-12-07", 1],
    ]);
    expect(card.agents[0]!.by.repository.map((s) => s.key)).toEqual(["octo/gpu-lib"]);
    expect(card.agents[0]!.rank).toBe(1);
    expect(card.total.figures).toEqual(c);
  });

  it("does not rank apart agents whose intervals overlap, even through a third", () => {
    const facts = [
      ...many(9, "a", "resolved"), ...many(1, "a", "official-failed"), // 90% [60–98]
      ...many(6, "b", "resolved"), ...many(4, "b", "official-failed"), // 60% [31–83]
      ...many(20, "c", "official-failed"), // 0% [0–16]: overlaps neither
      ...many(1, "d", "resolved"), // 1 judged: listed, not ranked
      ...many(5, null, "resolved"),
    ];
    const card = buildScorecard(facts, "all");
    expect(card.agents.map((x) => [x.agent, x.rank, x.tiedWith])).toEqual([
      ["a", 1, ["b"]],
      ["b", 1, ["a"]],
      ["c", 2, []],
      ["d", null, []],
      [NO_AGENT, null, []],
    ]);
    // A chain: e overlaps f, f overlaps g, e is clear of g: one tier.
    const chain = buildScorecard([...many(10, "e", "resolved"), ...many(7, "f", "resolved"), ...many(3, "f", "official-failed"), ...many(4, "g", "resolved"), ...many(6, "g", "official-failed")], "all");
    const e = chain.agents.find((x) => x.agent === "e")!.figures.resolved;
    const g = chain.agents.find((x) => x.agent === "g")!.figures.resolved;
    expect(e.low!).toBeGreaterThan(g.high!);
    expect(chain.agents.map((x) => x.rank)).toEqual([1, 1, 1]);
  });

  it("counts reruns by basis, and first attempt against best-of-N whatever the basis", () => {
    // One PR: official-failed first, then resolved on a rerun. Another: resolved at once.
    const rerun = [
      f("codex", "official-failed", { first: true, best: false, finishedAt: MON, groupFirstAt: MON }),
      f("codex", "resolved", { first: false, best: true, finishedAt: MON + DAY, groupFirstAt: MON }),
    ];
    const once = f("codex", "resolved", { finishedAt: MON + 2 * DAY });
    for (const basis of ["first-attempt", "best-of-n", "all"] as const) {
      const card = buildScorecard([...rerun, once], basis);
      const c = card.agents[0]!.figures;
      expect(c.firstAttempt).toMatchObject({ k: 1, n: 2 });
      expect(c.bestOfN).toMatchObject({ k: 2, n: 2 });
      expect(c.evaluations).toBe(basis === "all" ? 3 : 2);
      expect(c.verdicts.resolved).toBe(basis === "first-attempt" ? 1 : 2);
    }
    // `since` keeps groups whose first attempt is inside the window: the rerun's group began before it.
    const late = buildScorecard([...rerun, once], "best-of-n", new Date(MON + DAY / 2));
    expect(late.agents[0]!.figures.evaluations).toBe(1);
    expect(late.since).toBe(new Date(MON + DAY / 2).toISOString());
    expect(buildScorecard([...rerun, once], "all", new Date(MON + DAY / 2)).agents[0]!.figures.evaluations).toBe(2);
  });

  it("names what was not recorded, and puts weeks on Mondays (UTC)", () => {
    const card = buildScorecard([f("x", "resolved", { owner: null, repo: null, area: null })], "all");
    expect(card.keys.repository).toEqual(["(unknown repository)"]);
    expect(card.keys.area).toEqual([UNKNOWN_AREA]);
    expect(weekOf(Date.UTC(2026, 11, 6, 23, 59))).toBe("2026-11-30"); // a Sunday
    expect(weekOf(Date.UTC(2026, 11, 7))).toBe("2026-12-07");
    expect(weekOf(Date.UTC(1969, 11, 31))).toBe("1969-12-29");
  });
});

describe("parseScorecardFilter", () => {
  it("reads basis, owner/repo and since, and names the field that is wrong", () => {
    expect(parseScorecardFilter({})).toEqual({ ok: true, filter: { basis: "first-attempt" } });
    expect(parseScorecardFilter({ basis: "all", repo: "octo/gpu-lib", since: "2026-11-01" })).toEqual({
      ok: true,
      filter: { basis: "all", owner: "octo", repo: "gpu-lib", since: new Date("2026-11-01") },
    });
    expect(parseScorecardFilter({ basis: "best" })).toMatchObject({ ok: false, field: "basis" });
    expect(parseScorecardFilter({ repo: "a/b/c" })).toMatchObject({ ok: false, field: "repo", message: "'a/b/c': expected OWNER or OWNER/NAME" });
    expect(parseScorecardFilter({ since: "2026-13-45" })).toMatchObject({ ok: false, field: "since" });
  });
});
