import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { recordProbeFailures } from "../../src/store/dispatch-context.js";
import { insertOrGetEvaluation, transitionEvaluation } from "../../src/store/evaluations.js";
import type { ProbeResult } from "../../src/core/result.js";
import { tmp } from "../helpers.js";
import { cli } from "./run-cli.js";
import { at, freshStore, newEvaluation } from "../store/store-helpers.js";

const failure = (id: string, category: ProbeResult["category"]): ProbeResult => ({ id, category, status: "failed", message: `${id} failed`, durationS: 1 }) as ProbeResult;

describe("probegate scorecard", () => {
  let file = "";
  beforeAll(() => {
    const s = freshStore();
    file = s.file;
    const finish = (pr: number, agent: string | null, verdicts: Array<"resolved" | "probe-rejected" | "official-failed" | "error">, start: number, fails: ProbeResult[] = [], repo = "gpu-lib") => {
      const e = insertOrGetEvaluation(s.db, newEvaluation({ pr, agent, repo, headSha: String(pr % 10).repeat(40) }), at(start)).evaluation;
      verdicts.forEach((verdict, i) => {
        if (i > 0) transitionEvaluation(s.db, e.key, "retry", { now: at(start + i * 3) });
        transitionEvaluation(s.db, e.key, "dispatch", { now: at(start + i * 3 + 1) });
        transitionEvaluation(s.db, e.key, "complete", { now: at(start + i * 3 + 2), patch: { verdict } });
        if (verdict === "probe-rejected") recordProbeFailures(s.db, e.key, i + 1, fails);
      });
    };
    finish(1, "codex", ["probe-rejected", "resolved"], 0, [failure("optimizer-state-bytes", "memory"), failure("grad-traffic", "traffic")]);
    finish(2, "codex", ["probe-rejected"], 10, [failure("checkpoint-roundtrip", "state")]);
    finish(3, "claude", ["resolved"], 20);
    finish(4, "claude", ["official-failed"], 30, [], "other-repo");
    s.db.close();
  });

  it("prints a table per agent with the share caught by probes", async () => {
    const r = await cli("scorecard", "--db", file);
    expect(r.code).toBe(0);
    expect(r.out).toContain("all repositories: 4 evaluations; probes rejected 2/3 (too few to rate) of official-test passes");
    // rank, agent, evaluations, resolved, passed official, probe rejection: counts, never bare percentages under 5.
    expect(r.out).toMatch(/–\s*│\s*codex\s*│\s*2\s*│\s*0\/2 n<5\s*│\s*2\/2 n<5\s*│\s*2\/2 n<5\s*│/);
  });

  it("counts first attempts or best-of-N, per repository, as asked", async () => {
    const first = JSON.parse((await cli("scorecard", "--db", file, "--format", "json")).out);
    const codexFirst = first.agents.find((x: { agent: string }) => x.agent === "codex");
    expect(codexFirst.figures.verdicts).toMatchObject({ resolved: 0, "probe-rejected": 2 });
    expect(codexFirst.figures.failedCategories).toMatchObject({ memory: 1, traffic: 1, state: 1 });
    // PR 1 failed probes first and was resolved on the rerun: first attempt 0/2, best of N 1/2, on any basis.
    expect(codexFirst.figures.firstAttempt).toMatchObject({ k: 0, n: 2 });
    expect(codexFirst.figures.bestOfN).toMatchObject({ k: 1, n: 2 });
    const best = JSON.parse((await cli("scorecard", "--db", file, "--format", "json", "--basis", "best-of-n")).out);
    expect(best.agents.find((x: { agent: string }) => x.agent === "codex").figures.verdicts).toMatchObject({ resolved: 1, "probe-rejected": 1 });
    const one = JSON.parse((await cli("scorecard", "--db", file, "--format", "json", "--repo", "octo/other-repo")).out);
    expect(one.scope).toBe("octo/other-repo");
    expect(one.total.figures.evaluations).toBe(1);
    const since = JSON.parse((await cli("scorecard", "--db", file, "--format", "json", "--since", at(15).toISOString())).out);
    expect(since.total.figures.evaluations).toBe(2);
  });

  it("writes a self-contained HTML page with Chart.js inlined", async () => {
    const out = join(tmp("pg-scorecard-"), "scorecard.html");
    const r = await cli("scorecard", "--db", file, "--format", "html", "--out", out);
    expect(r.code).toBe(0);
    expect(r.err).toContain(`scorecard written to ${out}`);
    const html = readFileSync(out, "utf8");
    expect(html).toContain("Chart.js v4.5.1");
    expect(html).not.toMatch(/<script[^>]+src=/); // nothing fetched from the network
    expect(html).toContain("Hidden probes rejected <strong>2/3 (too few to rate)</strong> of the submissions that passed every official test");
    expect(html).toContain('<a href="https://github.com/octo/gpu-lib/pull/1">octo/gpu-lib#1</a>');
  });

  it("rejects a missing store, a bad repository, a bad date and a missing output folder, writing nothing", async () => {
    const missing = await cli("scorecard", "--db", "/nonexistent/probegate.sqlite");
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("no store at /nonexistent/probegate.sqlite");
    expect((await cli("scorecard", "--db", file, "--repo", "a/b/c")).err).toContain("--repo 'a/b/c': expected OWNER or OWNER/NAME");
    expect((await cli("scorecard", "--db", file, "--since", "last week")).err).toContain("--since 'last week': expected a date");
    const nowhere = await cli("scorecard", "--db", file, "--format", "html", "--out", "/nonexistent/dir/x.html");
    expect(nowhere.code).toBe(2);
    expect(nowhere.err).toContain("the folder /nonexistent/dir does not exist");
    expect(existsSync("/nonexistent/dir/x.html")).toBe(false);
    const notStore = join(tmp("pg-scorecard-"), "not.sqlite");
    writeFileSync(notStore, "this is not a database");
    const bad = await cli("scorecard", "--db", notStore);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain("not a probegate store");
  });
});
