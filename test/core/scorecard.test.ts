import { describe, expect, it } from "vitest";
import { buildScorecard, NO_AGENT, percent, renderScorecardMarkdown, type CountedAttempt } from "../../src/core/scorecard.js";
import { chartData, escapeHtml, renderScorecardHtml, scriptJson } from "../../src/core/scorecard-html.js";

const a = (agent: string | null, verdict: CountedAttempt["verdict"], failedCategories: CountedAttempt["failedCategories"] = [], task = "sharded-optimizer"): CountedAttempt => ({
  agent,
  task,
  verdict,
  failedCategories,
});

describe("buildScorecard", () => {
  const attempts = [
    a("codex", "resolved"),
    a("codex", "probe-rejected", ["memory", "memory", "traffic"]),
    a("codex", "probe-rejected", ["state"], "paged-kv-cache"),
    a("codex", "official-failed"),
    a("claude", "resolved"),
    a("claude", "resolved", [], "paged-kv-cache"),
    a("claude", "error"),
    a(null, "probe-rejected", ["time"]),
  ];
  const card = buildScorecard(attempts, "first-attempt");

  it("computes per-agent counts and rates, leaving errors out of the resolved rate", () => {
    const codex = card.agents.find((x) => x.agent === "codex")!;
    expect(codex.submissions).toBe(4);
    expect(codex.verdicts).toEqual({ resolved: 1, "probe-rejected": 2, "official-failed": 1, error: 0 });
    expect(codex.resolvedRate).toBeCloseTo(1 / 4);
    expect(codex.passedOfficial).toBe(3);
    expect(codex.caughtRate).toBeCloseTo(2 / 3);
    // A category counts once per submission, however many of its checks failed.
    expect(codex.failedCategories).toMatchObject({ memory: 1, traffic: 1, state: 1, time: 0 });
    expect(codex.tasks["paged-kv-cache"]).toEqual({ resolved: 0, "probe-rejected": 1, "official-failed": 0, error: 0 });
    const claude = card.agents.find((x) => x.agent === "claude")!;
    expect(claude.resolvedRate).toBe(1); // 2 resolved of 2 judged; the error judged nothing
    expect(claude.caughtRate).toBe(0);
  });

  it("orders agents by resolved rate and puts PRs without an agent last", () => {
    expect(card.agents.map((x) => x.agent)).toEqual(["claude", "codex", NO_AGENT]);
    expect(card.total.submissions).toBe(8);
    expect(card.total.caughtRate).toBeCloseTo(3 / 6);
    expect(card.tasks).toEqual(["paged-kv-cache", "sharded-optimizer"]);
  });

  it("has no rates to give when nothing was judged or passed", () => {
    const only = buildScorecard([a("x", "error")], "all");
    expect(only.agents[0]?.resolvedRate).toBeNull();
    expect(only.agents[0]?.caughtRate).toBeNull();
    expect(percent(null)).toBe("–");
    expect(buildScorecard([], "all").total.submissions).toBe(0);
  });

  it("renders a markdown table with a total row, escaping pipes in names", () => {
    const md = renderScorecardMarkdown(buildScorecard([...attempts, a("evil|agent", "resolved")], "best-of-n"));
    expect(md).toContain("best attempt per PR and task");
    expect(md).toContain("| codex | 4 | 1 | 2 | 1 | 0 | 25% | 67% | state 1, memory 1, traffic 1 |");
    expect(md).toContain("evil\\|agent");
    expect(md.trim().split("\n").at(-1)).toMatch(/^\| \*\*all agents\*\* \| \*\*9\*\*/);
  });
});

describe("renderScorecardHtml", () => {
  const hostile = buildScorecard([a('<img src=x onerror="alert(1)">', "probe-rejected", ["memory"]), a("codex</script><script>alert(2)</script>", "resolved")], "first-attempt");
  const html = renderScorecardHtml(hostile, { chartJs: "window.Chart = function () {};", title: "t", generatedAt: "2026-12-02T00:00:00.000Z", scope: "octo/<repo>" });

  it("escapes every name from the store, in markup and in the chart data", () => {
    expect(html).not.toContain("<img src=x");
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(html).not.toContain("</script><script>alert(2)");
    expect(html).toContain("octo/&lt;repo&gt;");
    expect(scriptJson({ s: "</script>" })).toBe('{"s":"\\u003c/script\\u003e"}');
    expect(escapeHtml(`a&b"'`)).toBe("a&amp;b&quot;&#39;");
  });

  it("embeds the chart library, the data and one canvas per chart", () => {
    expect(html).toContain("window.Chart = function () {};");
    expect(html.match(/<canvas id="(verdicts|caught|categories)"/g)).toHaveLength(3);
    const data = JSON.parse(/<script type="application\/json" id="scorecard-data">(.*?)<\/script>/s.exec(html)![1]!);
    expect(data.labels).toHaveLength(2);
    // Verdict shares of each agent add up to 100%.
    for (let i = 0; i < data.labels.length; i++) expect(data.verdicts.reduce((s: number, d: { data: number[] }) => s + d.data[i]!, 0)).toBeCloseTo(100);
  });

  it("says there is nothing to score on an empty store, with no charts", () => {
    const empty = renderScorecardHtml(buildScorecard([], "first-attempt"), { chartJs: "", title: "t", generatedAt: "now", scope: "all" });
    expect(empty).toContain("nothing to score yet");
    expect(empty).not.toContain("<canvas");
    expect(chartData(buildScorecard([], "all")).labels).toEqual([]);
  });
});

describe("parseScorecardFilter", () => {
  it("reads basis, owner/repo and since, and names the field that is wrong", async () => {
    const { parseScorecardFilter } = await import("../../src/core/scorecard.js");
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
