import { existsSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chartJsSource } from "../../src/assets/chart-js.js";
import { buildScorecard, categoryMask, type ScorecardFact } from "../../src/core/scorecard/scorecard.js";
import { latestPerAgent, type EvaluationLine } from "../../src/core/scorecard/scorecard-drilldown.js";
import { renderScorecardHtml } from "../../src/core/scorecard/scorecard-html.js";
import { ROOT } from "../helpers.js";

/** Debian's chromium (.ci/run installs it); PROBEGATE_CHROMIUM points elsewhere. */
const CHROMIUM = process.env.PROBEGATE_CHROMIUM ?? "/usr/bin/chromium";
const PAGE = "http://scorecard.test/";
const ARTIFACTS = join(ROOT, "test", "artifacts");

const DAY = 86_400_000;
const WEEK1 = Date.UTC(2026, 10, 23, 12); // Monday 2026-11-23
const WEEK2 = WEEK1 + 7 * DAY;
type V = ScorecardFact["verdict"];
const R: V = "resolved";
const P: V = "probe-rejected";
const O: V = "official-failed";

/** The fixture: verdicts per agent, the first half in week 1, the rest in week 2. */
const PLAN: Array<[string, V[], number[]]> = [
  // alpha: 7/10 resolved, 2 of 9 official passes caught (memory; memory + traffic).
  ["alpha", [R, R, R, R, P, R, R, R, P, O], [0, 0, 0, 0, categoryMask(["memory"]), 0, 0, 0, categoryMask(["memory", "traffic"]), 0]],
  // beta: 4/10 resolved, 4 of 8 caught (state ×3, time).
  ["beta", [R, R, P, P, O, R, R, P, P, O], [0, 0, categoryMask(["state"]), categoryMask(["state"]), 0, 0, 0, categoryMask(["state"]), categoryMask(["time"]), 0]],
  ["gamma", Array<V>(20).fill(O), []],
  // delta: 3 evaluations, all in week 2: listed, never drawn as a rate.
  ["delta", [R, R, R], []],
];

function fixture() {
  const facts: ScorecardFact[] = [];
  const lines: EvaluationLine[] = [];
  let pr = 0;
  for (const [agent, verdicts, masks] of PLAN) {
    verdicts.forEach((verdict, i) => {
      const at = (agent === "delta" || i >= verdicts.length / 2 ? WEEK2 : WEEK1) + i * 60_000;
      pr += 1;
      facts.push({ agent, owner: "octo", repo: "gpu-lib", task: "sharded-optimizer", area: "training", verdict, finishedAt: at, groupFirstAt: at, first: true, best: true, failedMask: masks[i] ?? 0, durationS: 100 + i, gpuSeconds: 60 });
      lines.push({ agent, owner: "octo", repo: "gpu-lib", pr, task: "sharded-optimizer", verdict, attempt: 1, finishedAt: new Date(at).toISOString(), first: true, best: true, failedCategories: [], durationS: 100 + i, headSha: "c0ffee".padEnd(40, "0"), evaluationKey: null, runUrl: null });
    });
  }
  return { card: buildScorecard(facts, "first-attempt"), drill: latestPerAgent(lines) };
}

let browser: Browser;
beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (.ci/run does), or set PROBEGATE_CHROMIUM`);
  // The sandbox needs user namespaces, which containers (CI, this project's machines) often lack.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
});
afterAll(async () => {
  await browser?.close();
});

describe("the HTML scorecard in a real Chromium", () => {
  it("renders every chart with the fixture's numbers, opens a drill-down, and makes no request", async () => {
    const { card, drill } = fixture();
    const html = renderScorecardHtml(card, { chartJs: chartJsSource(), title: "probegate scorecard", generatedAt: "2026-12-03T09:00:00.000Z", scope: "octo/gpu-lib", drill });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const requests: string[] = [];
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    // Every request the page makes passes here: the page itself is served, anything else is refused and recorded.
    await page.route("**/*", async (route) => {
      const url = route.request().url();
      requests.push(url);
      if (url === PAGE) await route.fulfill({ status: 200, contentType: "text/html; charset=utf-8", body: html });
      else await route.abort();
    });
    await page.goto(PAGE);
    await page.waitForFunction(() => ["ranking", "probe-rejection", "categories", "trend-resolved", "trend-evaluations"].every((id) => (window as unknown as { Chart: { getChart(id: string): unknown } }).Chart.getChart(id)));

    const charts = await page.evaluate(() => {
      const C = (window as unknown as { Chart: { getChart(id: string): { data: { labels: string[]; datasets: Array<{ label: string; data: unknown[] }> } } } }).Chart;
      const of = (id: string) => {
        const c = C.getChart(id);
        return { labels: c.data.labels, datasets: c.data.datasets.map((d) => ({ label: d.label, data: d.data })) };
      };
      // A drawn chart has coloured pixels; a blank canvas has none.
      const inked = (id: string) => {
        const cv = document.getElementById(id) as HTMLCanvasElement;
        const px = cv.getContext("2d")!.getImageData(0, 0, cv.width, cv.height).data;
        let n = 0;
        for (let i = 3; i < px.length; i += 4) if (px[i]! > 0) n++;
        return n;
      };
      const ids = ["ranking", "probe-rejection", "categories", "trend-resolved", "trend-evaluations"];
      return { data: Object.fromEntries(ids.map((id) => [id, of(id)])) as Record<string, ReturnType<typeof of>>, inked: Object.fromEntries(ids.map((id) => [id, inked(id)])) };
    });

    // Ranking: resolved 7/10, 4/10, 0/20 with hand-computed 95% Wilson intervals; delta (3) is not drawn.
    expect(charts.data.ranking).toEqual({
      labels: ["alpha", "beta", "gamma"],
      datasets: [
        { label: "95% interval", data: [[39.7, 89.2], [16.8, 68.7], [0, 16.1]] },
        { label: "rate", data: [70, 40, 0] },
      ],
    });
    // Probe rejection: 2 of alpha's 9 official passes, 4 of beta's 8; gamma passed none, delta 0 of 3 (too few).
    expect(charts.data["probe-rejection"]).toEqual({
      labels: ["alpha", "beta"],
      datasets: [
        { label: "95% interval", data: [[6.3, 54.7], [21.5, 78.5]] },
        { label: "rate", data: [22.2, 50] },
      ],
    });
    const cats = Object.fromEntries(charts.data.categories!.datasets.map((d) => [d.label, d.data]));
    expect(charts.data.categories!.labels).toEqual(["alpha", "beta", "gamma", "delta"]);
    expect(cats).toEqual({ structure: [0, 0, 0, 0], state: [0, 3, 0, 0], functional: [0, 0, 0, 0], memory: [2, 0, 0, 0], time: [0, 1, 0, 0], traffic: [1, 0, 0, 0] });
    // Weekly: alpha 4/5 then 3/5, beta 2/5 twice, gamma 0/10 twice, delta has fewer than 5 in any week.
    expect(charts.data["trend-resolved"]).toEqual({
      labels: ["2026-11-23", "2026-11-30"],
      datasets: [
        { label: "alpha", data: [80, 60] },
        { label: "beta", data: [40, 40] },
        { label: "gamma", data: [0, 0] },
        { label: "delta", data: [null, null] },
      ],
    });
    expect(charts.data["trend-evaluations"]!.datasets.map((d) => d.data)).toEqual([[5, 5], [5, 5], [10, 10], [0, 3]]);
    for (const [id, n] of Object.entries(charts.inked)) expect(n, `chart ${id} drew nothing`).toBeGreaterThan(500);

    // Overlapping intervals share a rank; the ranking table says so and shows counts, never bare percentages under 5.
    const ranks = await page.$$eval("#ranking-table tbody tr", (rows) => rows.map((r) => [r.children[0]!.textContent, r.children[1]!.textContent, r.children[3]!.textContent]));
    expect(ranks).toEqual([
      ["=1", "alpha", "70% [40–89] 7/10"],
      ["=1", "beta", "40% [17–69] 4/10"],
      ["2", "gamma", "0% [0–16] 0/20"],
      ["–", "delta", "3/3 n<5"],
      ["–", "all agents", "33% [20–47] 14/43"],
    ]);
    await expect(page.locator("text=Not drawn (fewer than 5): delta (3/3).").first().isVisible()).resolves.toBe(true);

    // The drill-down: closed at first; clicking beta in the ranking opens its evaluations, linked to their PRs.
    const betaDrill = page.locator("details#drill-1");
    expect(await betaDrill.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false);
    await page.click("#ranking-table a.drill-link >> text=beta");
    expect(await betaDrill.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(true);
    const links = await betaDrill.locator("tbody a").evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute("href")]));
    expect(links).toHaveLength(10);
    expect(links[0]).toEqual(["octo/gpu-lib#20", "https://github.com/octo/gpu-lib/pull/20"]);
    expect(await betaDrill.locator("tbody tr").first().isVisible()).toBe(true);

    mkdirSync(ARTIFACTS, { recursive: true });
    const shot = join(ARTIFACTS, "scorecard.png");
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(20_000);

    expect(errors).toEqual([]);
    expect(requests).toEqual([PAGE]);
    await page.close();
  });
});
