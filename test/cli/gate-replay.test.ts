import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { EvaluationResult } from "../../src/core/result.js";
import type { EvaluateOptions } from "../../src/engine/evaluate.js";
import { loadTask } from "../../src/engine/task-load.js";
import { gateReplayCommand, type GateReplayFlags } from "../../src/cli/gate-replay-command.js";
import { commitsFromHistory, commitsFromShas, openRepo, prNumber, watchedPaths } from "../../src/cli/gate-replay-history.js";
import { injectOnto, scratchRepo } from "../../src/cli/gate-replay-inject.js";
import { failedChecks, keyNumbers, measuredFigures } from "../../src/cli/gate-replay-table.js";
import { ROOT, sampleResult, tmp, TINY_TASK } from "../helpers.js";
import { gateTask } from "../engine/repo-gate/gate-repo.js";
import { cli } from "./run-cli.js";
import { bareMirror, gitAt, history } from "./gate-replay-repo.js";

const h = history();
const task = gateTask();
const WATCHED = watchedPaths(task.spec);

describe("gate replay: which commits, and their bases", () => {
  it("walks the first-parent history newest first, keeps commits changing a watched path, and takes a merge's base from its first parent", async () => {
    const repo = await openRepo(h.dir);
    const got = await commitsFromHistory(repo, { ref: "HEAD", count: 10, paths: WATCHED });
    expect(got.map((c) => c.sha)).toEqual([h.squash, h.merge]);
    // The merge: its first parent (main), its title the PR's (the body's first line), every path its branch changed.
    expect(got[1]).toMatchObject({ parent: h.docs, pr: 11, title: "Add mul to calc", changed: ["calc/extra.py", "calc/ops.py"] });
    expect(got[0]).toMatchObject({ parent: h.merge, pr: 12, title: "Fix add for negatives (#12)", changed: ["calc/ops.py"] });
  });

  it("limits by --count and --since; with no path filter takes every commit but the root", async () => {
    const repo = await openRepo(h.dir);
    expect((await commitsFromHistory(repo, { ref: "HEAD", count: 1, paths: WATCHED })).map((c) => c.sha)).toEqual([h.squash]);
    expect((await commitsFromHistory(repo, { ref: "HEAD", count: 10, paths: null })).map((c) => c.sha)).toEqual([h.squash, h.merge, h.docs]);
    expect((await commitsFromHistory(repo, { ref: "HEAD", since: "2025-02-15T00:00:00.000Z", paths: null })).map((c) => c.sha)).toEqual([h.squash, h.merge]);
    expect((await commitsFromHistory(repo, { ref: h.merge, count: 5, paths: [["docs/**"]] })).map((c) => c.pr)).toEqual([10]);
  });

  it("says which filter emptied the selection", async () => {
    const repo = await openRepo(h.dir);
    await expect(commitsFromHistory(repo, { ref: "HEAD", since: "2026-01-01T00:00:00.000Z", paths: WATCHED })).rejects.toThrow(/no commits selected: no first-parent commit of HEAD .* since 2026-01-01 \(--since\)/);
    await expect(commitsFromHistory(repo, { ref: "HEAD", count: 3, paths: [["src/**"]] })).rejects.toThrow(/none of the 4 first-parent commits .* changes a watched path \(src\/\*\*\); --paths .* --all-paths/);
    await expect(commitsFromHistory(repo, { ref: "nope", count: 3, paths: null })).rejects.toThrow(/--ref nope: not a branch, tag or commit/);
  });

  it("--shas: any commit, abbreviated or named, its base its first parent; unknown and root commits refused", async () => {
    const repo = await openRepo(bareMirror(h.dir));
    const got = await commitsFromShas(repo, [h.branch[1].slice(0, 8), "main", h.squash]);
    expect(got.map((c) => [c.sha, c.parent])).toEqual([[h.branch[1], h.branch[0]], [h.squash, h.merge]]);
    expect(got[0]?.changed).toEqual(["calc/extra.py"]);
    await expect(commitsFromShas(repo, ["deadbeef1"])).rejects.toThrow(/--shas: deadbeef1 is not a commit of/);
    await expect(commitsFromShas(repo, [h.root])).rejects.toThrow(/has no parent: a root commit is no PR/);
  });

  it("--repo: a work tree, its .git, or a bare mirror; not a subfolder, not a plain folder", async () => {
    const mirror = bareMirror(h.dir);
    expect((await openRepo(mirror)).source).toBe(mirror);
    expect((await openRepo(h.dir)).source).toBe(h.dir);
    expect((await openRepo(join(h.dir, ".git"))).source).toBe(join(h.dir, ".git"));
    await expect(openRepo(join(h.dir, "calc"))).rejects.toThrow(/a folder inside the work tree .*give the work tree's top folder/);
    await expect(openRepo(tmp())).rejects.toThrow(/not a git repository/);
    await expect(openRepo("/no/such/dir")).rejects.toThrow(/no such folder/);
  });

  it("reads PR numbers and the gate's watched paths from task.yml alone", () => {
    expect([prNumber("Fix x (#1234)"), prNumber("Merge pull request #77 from a/b"), prNumber("no number #5 here")]).toEqual([1234, 77, null]);
    const verl = watchedPaths(loadTask(join(ROOT, "tasks", "verl-core-algos-gate")).spec);
    expect(verl).toContainEqual(["verl/utils/torch_functional.py", "tests/utils/test_torch_functional.py"]);
    expect(verl).toContainEqual(["tests/trainer/ppo/test_core_algos_on_cpu.py", "tests/trainer/ppo/test_core_algos_on_cpu.py/**"]);
  });
});

describe("gate replay: the table's numbers, from any gate's result", () => {
  it("pairs head_/base_ figures and ratios, counts tests at head and base, and lists failing tests and checks", () => {
    expect(measuredFigures({ id: "step-peak-memory", measured: { head_peak_bytes: 300 * 2 ** 20, base_peak_bytes: 200 * 2 ** 20, head_only: 3 } })).toEqual(["step-peak-memory peak bytes 300 MiB/200 MiB"]);
    expect(measuredFigures({ id: "step-time", measured: { time_ratio: 1.234, rank_test_p: 0.01 } })).toEqual(["step-time ×1.23"]);
    const base = sampleResult();
    const r = sampleResult({
      verdict: "official-failed",
      official: { ...(base.official as NonNullable<EvaluationResult["official"]>), passed: false, counts: { total: 4, passed: 3, failed: 1, errors: 0, skipped: 0 }, failing: [{ name: "test_add[1-2]", classname: "tests.test_ops", kind: "failure", message: "assert 0 == 3\n  where 0 = add(1, 2)" }], base: { counts: { total: 4, passed: 4, failed: 0, errors: 0, skipped: 0 }, durationS: 1, cached: true } },
      gpuSeconds: 12.4,
    });
    expect(keyNumbers(r)).toEqual(["tests 3/4 (base 4/4)", "checks 1/2 passed", "6.5s (official 3.2s, probes 3.0s)", "12 GPU·s"]);
    expect(failedChecks(r)[0]).toBe("test tests.test_ops.test_add[1-2]: assert 0 == 3 where 0 = add(1, 2)");
    expect(failedChecks(sampleResult({ verdict: "error", probes: [], reason: "no repository test is selected" }))).toEqual(["no repository test is selected"]);
  });
});

/** Stands in for the engine: a result of the gate for what it was asked, and the phase events it would send. */
function fakeEvaluate(calls: EvaluateOptions[], over: (o: EvaluateOptions) => Partial<EvaluationResult> = () => ({})) {
  return async (o: EvaluateOptions): Promise<EvaluationResult> => {
    calls.push(o);
    o.onEvent?.({ type: "phase-start", phase: "official", detail: "3 runs" });
    o.onEvent?.({ type: "log", source: "official", text: "pytest says hello\n" });
    const ref = o.submission.kind === "git" ? o.submission.ref : "";
    return sampleResult({ task: { ...sampleResult().task, id: "calc-gate" }, submission: { kind: "git", source: "x", sha: ref, prBase: { asked: o.prBase ?? "", mergeBase: o.prBase ?? "" } }, ...over(o) });
  };
}

const flagsFor = (over: Partial<GateReplayFlags>): GateReplayFlags => ({ repo: h.dir, task: task.dir, ref: "HEAD", seed: "1", alwaysProbe: true, gpus: "none", outDir: tmp("pg-replay-out-"), ...over });

function capture() {
  const io = { out: "", err: "", stdout: (s: string) => void (io.out += s), stderr: (s: string) => void (io.err += s) };
  return io;
}

describe("gate replay: the command", () => {
  it("evaluates each PR against its first parent, writes one result per PR and the tables, and shows progress per PR", async () => {
    const calls: EvaluateOptions[] = [];
    const io = capture();
    const flags = flagsFor({ count: "5", table: join(tmp(), "table.md"), jobs: "2" });
    const code = await gateReplayCommand(flags, io, { evaluate: fakeEvaluate(calls) });
    expect(code).toBe(0);
    expect(calls.map((c) => [c.submission, c.prBase, c.seed, c.alwaysProbe])).toEqual(
      expect.arrayContaining([[{ kind: "git", repo: h.dir, ref: h.merge }, h.docs, 1, true], [{ kind: "git", repo: h.dir, ref: h.squash }, h.merge, 1, true]]),
    );
    expect(calls).toHaveLength(2);
    const file = join(flags.outDir as string, `${h.merge.slice(0, 9)}.json`);
    expect(JSON.parse(readFileSync(file, "utf8")).submission.sha).toBe(h.merge);
    // The log has everything, runner output too; the terminal the phases, prefixed by the PR.
    expect(readFileSync(`${file}.log`, "utf8")).toContain("pytest says hello");
    expect(io.err).toMatch(/\[\d\/2 #11 [0-9a-f]{9}\] ▸ official tests \(3 runs\)…/);
    expect(io.err).toMatch(/\[\d\/2 #12 [0-9a-f]{9}\] probe-rejected in 6.5s: state-sharded \(memory\): optimizer state per rank/);
    expect(io.err).not.toContain("pytest says hello");
    const md = readFileSync(flags.table as string, "utf8").split("\n");
    expect(md[0]).toBe("| # | PR / sha (base) | title | changed paths (watched / all) | verdict | key numbers | failed checks | explanation |");
    expect(md[2]).toBe(
      `| 1 | #12 \`${h.squash.slice(0, 9)}\` (\`${h.merge.slice(0, 9)}\`) | Fix add for negatives (#12) | calc/ops.py (1/1) | **probe-rejected** | tests 4/4; checks 1/2 passed; 6.5s (official 3.2s, probes 3.0s) | state-sharded (memory): optimizer state per rank is 64.0 MiB \\| expected ≤ 34 MiB |  |`,
    );
    expect(md[3]).toContain("| 2 | #11 ");
    expect(md[3]).toContain("| Add mul to calc | calc/extra.py, calc/ops.py (2/2) |");
    expect(io.out).toContain("Add mul to calc");
    expect(io.out).toContain("probe-rejected");
  });

  it("resumes: a PR whose result is in --out-dir is kept, unless --force; a result of another task is refused", async () => {
    const calls: EvaluateOptions[] = [];
    const flags = flagsFor({ shas: [h.squash, h.merge] });
    await gateReplayCommand(flags, capture(), { evaluate: fakeEvaluate(calls) });
    expect(calls).toHaveLength(2);
    const io = capture();
    expect(await gateReplayCommand(flags, io, { evaluate: fakeEvaluate(calls) })).toBe(0);
    expect(calls).toHaveLength(2);
    expect(io.err).toContain("2 PRs of");
    expect(io.err).toContain("2 already in");
    await gateReplayCommand({ ...flags, force: true }, capture(), { evaluate: fakeEvaluate(calls) });
    expect(calls).toHaveLength(4);
    // A result cut short is not one: evaluated again.
    const file = join(flags.outDir as string, `${h.squash.slice(0, 9)}.json`);
    writeFileSync(file, '{"schemaVersion": 1, "verd');
    await gateReplayCommand(flags, capture(), { evaluate: fakeEvaluate(calls) });
    expect(calls.map((c) => (c.submission.kind === "git" ? c.submission.ref : "")).slice(4)).toEqual([h.squash]);
    writeFileSync(file, JSON.stringify(sampleResult({ submission: { kind: "git", source: "x", sha: h.squash, prBase: { asked: h.merge, mergeBase: h.merge } } })));
    await expect(gateReplayCommand(flags, capture(), { evaluate: fakeEvaluate(calls) })).rejects.toThrow(/is a result of task sharded-optimizer, not of calc-gate .*--force/);
  });

  it("--table-only evaluates nothing; a PR the engine refuses or errs on is its row's, and the exit code says so", async () => {
    const calls: EvaluateOptions[] = [];
    const flags = flagsFor({ shas: [h.squash, h.merge] });
    const io = capture();
    expect(await gateReplayCommand({ ...flags, tableOnly: true }, io, { evaluate: fakeEvaluate(calls) })).toBe(3);
    expect(calls).toHaveLength(0);
    expect(io.out).toContain("not run (--table-only)");
    const failing = async (o: EvaluateOptions) => {
      if (o.prBase === h.docs) throw new Error("workspace: cannot read the repository");
      return fakeEvaluate(calls, () => ({ verdict: "resolved", probes: [] }))(o);
    };
    const io2 = capture();
    expect(await gateReplayCommand(flags, io2, { evaluate: failing })).toBe(3);
    expect(existsSync(join(flags.outDir as string, `${h.merge.slice(0, 9)}.json`))).toBe(false);
    expect(io2.out).toContain("not judged");
    expect(io2.out).toContain("resolved");
  });

  it("stops starting PRs once stopped (Ctrl-C), and tabulates those that finished", async () => {
    const calls: EvaluateOptions[] = [];
    const stop = new AbortController();
    const fake = fakeEvaluate(calls);
    const io = capture();
    const code = await gateReplayCommand(flagsFor({ shas: [h.squash, h.merge] }), io, { signal: stop.signal, evaluate: async (o) => (stop.abort(), fake(o)) });
    expect([code, calls.length]).toEqual([3, 1]);
    expect(io.out).toContain("not started (stopped)");
    expect(io.err).toMatch(/stopped by .*, 1 not started; the same command goes on from here/);
  });

  it("--inject commits each patch on top of each PR and judges it against the PR's base, in a scratch repository", async () => {
    const patch = join(tmp(), "zero-add.patch");
    writeFileSync(patch, "--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n-    return a + b\n+    return 0\n # negatives too\n");
    const calls: EvaluateOptions[] = [];
    const flags = flagsFor({ shas: [h.squash], inject: [patch] });
    const io = capture();
    const code = await gateReplayCommand(flags, io, { evaluate: fakeEvaluate(calls) });
    expect(code).toBe(0);
    expect(calls[0]?.prBase).toBe(h.merge);
    expect(existsSync(join(flags.outDir as string, `inject-zero-add-${h.squash.slice(0, 9)}.json`))).toBe(true);
    expect(io.out).toContain("inject zero-add on #12");
    // The injected commit, as the engine sees it (it clones the scratch repository): the patch on top of the PR.
    const scratch = await scratchRepo(await openRepo(h.dir), tmp());
    const head = await injectOnto(scratch, h.squash, { name: "zero-add", patch });
    const clone = join(tmp(), "c.git");
    gitAt(ROOT, null, "clone", "-q", "--bare", scratch.gitDir, clone);
    expect(gitAt(clone, null, "--git-dir", clone, "show", `${head}:calc/ops.py`)).toContain("return 0");
    expect(gitAt(clone, null, "--git-dir", clone, "rev-parse", `${head}^1`)).toBe(h.squash);
    await expect(injectOnto(scratch, h.root, { name: "zero-add", patch: join(ROOT, "package.json") })).rejects.toThrow(/--inject zero-add: git apply failed/);
  });

  it("refuses what it cannot replay, with what to do", async () => {
    const run = (...a: string[]) => cli("gate", "replay", "--repo", h.dir, "--task", task.dir, "--out-dir", tmp(), ...a);
    expect((await run()).err).toMatch(/say which PRs: --shas <sha...>, or --since <date>/);
    expect((await run("--shas", "abc", "--count", "2")).err).toMatch(/give one or the other/);
    expect((await run("--since", "last week")).err).toMatch(/--since: expected a date like 2025-06-01/);
    expect((await run("--count", "3", "--paths", "nothing/**")).err).toMatch(/no commits selected: none of the 4 .*nothing\/\*\*/);
    const notRepo = await cli("gate", "replay", "--repo", tmp(), "--task", task.dir, "--count", "1");
    expect([notRepo.code, notRepo.err]).toEqual([2, expect.stringMatching(/--repo .*not a git repository/)]);
    expect((await cli("gate", "replay", "--repo", h.dir, "--task", TINY_TASK, "--count", "1")).err).toMatch(/tiny-sum is not a repository gate/);
    expect((await cli("gate", "replay", "--repo", h.dir, "--task", tmp(), "--count", "1")).err).toMatch(/task\.yml/);
  });
});

describe("gate replay: end to end", () => {
  it("judges a real PR with the engine, from a folder that is not the checkout", async () => {
    const out = tmp("pg-replay-e2e-");
    const cwd = process.cwd();
    process.chdir(tmp());
    try {
      const r = await cli("gate", "replay", "--repo", h.dir, "--task", task.dir, "--shas", h.squash, "--out-dir", out, "--gpus", "none");
      expect(r.err).toContain(`[1/1 #12 ${h.squash.slice(0, 9)}] ▸ official tests`);
      expect([r.code, JSON.parse(readFileSync(join(out, `${h.squash.slice(0, 9)}.json`), "utf8")).verdict]).toEqual([0, "resolved"]);
      expect(r.out).toMatch(/resolved/);
      // Run again: the result is kept, nothing is evaluated.
      const again = await cli("gate", "replay", "--repo", h.dir, "--task", task.dir, "--shas", h.squash, "--out-dir", out, "--gpus", "none");
      expect([again.code, again.err]).toEqual([0, expect.stringContaining("1 already in")]);
      expect(again.err).not.toContain("▸ official tests");
    } finally {
      process.chdir(cwd);
    }
  }, 180_000);
});
