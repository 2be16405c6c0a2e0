import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { signResult } from "../../src/core/result-signature.js";
import { factsOfResults, identify, prOfRef, repoOf, type ResultFile } from "../../src/core/scorecard/scorecard-results.js";
import type { EvaluationResult } from "../../src/core/result.js";
import { sampleResult, tmp } from "../helpers.js";
import { cli } from "./run-cli.js";

const KEY = "results-folder-test-key-0123456789";

const result = (verdict: EvaluationResult["verdict"], finishedAt: string, over: Partial<EvaluationResult> = {}) =>
  sampleResult({ verdict, finishedAt, probes: verdict === "probe-rejected" ? sampleResult().probes : [], ...over });
const file = (name: string, r: EvaluationResult, context: ResultFile["context"] = null): ResultFile => ({ file: name, result: r, context });

describe("result files as scorecard facts", () => {
  it("finds the repository and PR in the submission, the sidecar winning", () => {
    expect(repoOf("octo/gpu-lib")).toEqual({ owner: "octo", repo: "gpu-lib" });
    expect(repoOf("https://github.com/octo/gpu-lib.git")).toEqual({ owner: "octo", repo: "gpu-lib" });
    expect(repoOf("git@github.com:octo/gpu-lib.git")).toEqual({ owner: "octo", repo: "gpu-lib" });
    expect(repoOf("/home/me/checkout")).toBeNull();
    expect(prOfRef("refs/pull/12/merge")).toBe(12);
    expect(prOfRef("pull/7/head")).toBe(7);
    expect(prOfRef("feature")).toBeNull();
    const r = result("resolved", "2026-12-01T10:00:00Z", { submission: { kind: "git", source: "x", repo: "octo/gpu-lib", ref: "refs/pull/12/merge", sha: "a".repeat(40) } });
    expect(identify(file("a.json", r))).toEqual({ owner: "octo", repo: "gpu-lib", pr: 12, agent: null, headSha: "a".repeat(40) });
    expect(identify(file("a.json", r, { repo: "fork/lib", pr: 3, agent: "Claude" }))).toMatchObject({ owner: "fork", repo: "lib", pr: 3, agent: "claude" });
    // No agent named: detected from the author as the app would.
    expect(identify(file("a.json", r, { author: "copilot-swe-agent[bot]", authorType: "Bot" })).agent).toBe("copilot");
    expect(identify(file("a.json", r, { author: "octocat" })).agent).toBeNull();
  });

  it("groups reruns of a PR into first and best, and counts a duplicate once", () => {
    const pr = { repo: "octo/gpu-lib", pr: 5, agent: "codex" };
    const first = signResult(result("probe-rejected", "2026-12-01T10:00:00Z"), KEY);
    const rerun = signResult(result("resolved", "2026-12-01T11:00:00Z"), KEY);
    const other = result("official-failed", "2026-12-02T10:00:00Z", { evaluationKey: "key-9" });
    const { facts, lines, skipped } = factsOfResults([file("b/rerun.json", rerun, pr), file("a/first.json", first, pr), file("c/copy.json", first, pr), file("d.json", other)]);
    expect(skipped).toEqual([{ file: "c/copy.json", why: "the same result as a/first.json (counted once)" }]);
    expect(facts.map((f) => [f.verdict, f.first, f.best, f.groupFirstAt])).toEqual([
      ["probe-rejected", true, false, Date.parse("2026-12-01T10:00:00Z")],
      ["resolved", false, true, Date.parse("2026-12-01T10:00:00Z")],
      ["official-failed", true, true, Date.parse("2026-12-02T10:00:00Z")],
    ]);
    expect(facts[0]).toMatchObject({ agent: "codex", owner: "octo", repo: "gpu-lib", area: "training", failedMask: 8, durationS: 6.5 });
    expect(lines.map((l) => [l.file, l.attempt, l.pr])).toEqual([
      ["a/first.json", 1, 5],
      ["b/rerun.json", 2, 5],
      ["d.json", 1, null],
    ]);
  });
});

describe("probegate scorecard --results", () => {
  const saved = process.env.PROBEGATE_SIGNING_KEY;
  afterEach(() => {
    if (saved === undefined) delete process.env.PROBEGATE_SIGNING_KEY;
    else process.env.PROBEGATE_SIGNING_KEY = saved;
  });

  function folder(): string {
    const dir = tmp("pg-results-");
    const put = (name: string, body: unknown) => {
      mkdirSync(join(dir, name, ".."), { recursive: true });
      writeFileSync(join(dir, name), typeof body === "string" ? body : JSON.stringify(body));
    };
    for (let i = 0; i < 6; i++) {
      put(`run-${i}/probegate-result.json`, signResult(result(i < 4 ? "resolved" : "probe-rejected", `2026-12-0${i + 1}T10:00:00Z`, { evaluationKey: `k${i}` }), KEY));
      put(`run-${i}/probegate-result.context.json`, { repo: "octo/gpu-lib", pr: 100 + i, agent: "claude" });
    }
    put("unsigned.json", result("official-failed", "2026-12-02T10:00:00Z", { evaluationKey: "u" }));
    const tampered = signResult(result("official-failed", "2026-12-02T10:00:00Z", { evaluationKey: "t" }), KEY);
    put("tampered.json", { ...tampered, verdict: "resolved" });
    put("broken.json", "{ not json");
    put("wrong-shape.json", { schemaVersion: 1, verdict: "resolved" });
    put("newer.json", { ...sampleResult(), schemaVersion: 99 });
    put("bad-sidecar.json", signResult(result("resolved", "2026-12-03T10:00:00Z", { evaluationKey: "s" }), KEY));
    put("bad-sidecar.context.json", { pr: "seven" });
    return dir;
  }

  it("counts only valid results signed with the key, and lists every file left out with why", async () => {
    const dir = folder();
    process.env.PROBEGATE_SIGNING_KEY = KEY;
    const r = await cli("scorecard", "--results", dir, "--format", "json");
    expect(r.code).toBe(0);
    const card = JSON.parse(r.out);
    expect(card.total.figures.evaluations).toBe(6);
    expect(card.agents.map((a: { agent: string; rank: number }) => [a.agent, a.rank])).toEqual([["claude", 1]]);
    expect(card.agents[0].figures.resolved).toMatchObject({ k: 4, n: 6 });
    expect(card.agents[0].figures.probeRejection).toMatchObject({ k: 2, n: 6 });
    const why = Object.fromEntries(card.skipped.map((s: { file: string; why: string }) => [s.file.split("/").at(-1), s.why]));
    expect(Object.keys(why).sort()).toEqual(["bad-sidecar.json", "broken.json", "newer.json", "tampered.json", "unsigned.json", "wrong-shape.json"]);
    expect(why["unsigned.json"]).toContain("the result is not signed");
    expect(why["tampered.json"]).toContain("the signature does not match");
    expect(why["broken.json"]).toContain("not JSON");
    expect(why["wrong-shape.json"]).toContain("does not match the result schema");
    expect(why["newer.json"]).toContain("newer than this probegate reads");
    expect(why["bad-sidecar.json"]).toMatch(/sidecar .*bad-sidecar\.context\.json: `pr`/);
    expect(r.err).toContain("6 result file(s) read");
    expect(r.err).toContain("6 left out");
    expect(r.err).toMatch(/✗ .*tampered\.json: the signature does not match/);
    const strict = await cli("scorecard", "--results", dir, "--format", "markdown", "--strict");
    expect(strict.code).toBe(1);
    expect(strict.out).toContain("**6 file(s) left out:**");
    expect(strict.out).toMatch(/\| 1 \| claude \| 6 \| 67% \[30–90\] 4\/6 \|/);
  });

  it("without a key counts unsigned results too, and says signatures were not checked", async () => {
    delete process.env.PROBEGATE_SIGNING_KEY;
    const r = await cli("scorecard", "--results", folder(), "--format", "json", "--repo", "octo/gpu-lib");
    const card = JSON.parse(r.out);
    // The tampered and unsigned files have no PR sidecar: their repository comes from the submission (octo/repo), not in scope.
    expect(card.total.figures.evaluations).toBe(6);
    expect(r.err).toContain("signatures not checked (no key given)");
    const all = JSON.parse((await cli("scorecard", "--results", folder(), "--format", "json", "--basis", "all")).out);
    // The six runs, the unsigned and the tampered one; the broken sidecar still keeps its result out.
    expect(all.total.figures.evaluations).toBe(8);
  });

  it("refuses a missing folder, both sources at once, and a key variable that is not set", async () => {
    expect((await cli("scorecard", "--results", "/nonexistent/results")).err).toContain("--results /nonexistent/results: no such folder");
    expect((await cli("scorecard", "--results", tmp(), "--db", "x.sqlite")).err).toContain("give one source");
    const unset = await cli("scorecard", "--results", tmp(), "--key-env", "PROBEGATE_TEST_UNSET_KEY");
    expect(unset.code).toBe(2);
    expect(unset.err).toContain("--key-env PROBEGATE_TEST_UNSET_KEY: that variable is not set");
  });
});
