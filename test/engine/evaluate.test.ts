import { chmodSync, cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { EvaluationResultSchema, type EvaluationResult } from "../../src/core/result.js";
import { evaluate, type EvaluateOptions } from "../../src/engine/evaluate.js";
import { InputError } from "../../src/engine/errors.js";
import { findControllers } from "../../src/engine/sandbox/cgroup.js";
import { loadTask } from "../../src/engine/task-load.js";
import type { SubmissionSource } from "../../src/engine/submission.js";
import { KIT, TINY_SUBS, TINY_TASK, tmp } from "../helpers.js";

const task = loadTask(TINY_TASK);
const patch = (name: string): SubmissionSource => ({ kind: "patch", path: join(TINY_SUBS, `${name}.patch`) });

async function run(submission: SubmissionSource, over: Partial<EvaluateOptions> = {}): Promise<EvaluationResult> {
  const result = await evaluate({ task, submission, kitDir: KIT, ...over });
  // Every result the engine returns is schema-valid.
  expect(EvaluationResultSchema.parse(result)).toEqual(result);
  return result;
}

/** A whole-tree submission: the base with `files` written over it. */
function tree(files: Record<string, string>): SubmissionSource {
  const dir = join(tmp(), "sub");
  cpSync(join(TINY_TASK, "base"), dir, { recursive: true });
  for (const [path, content] of Object.entries(files)) writeFileSync(join(dir, path), content);
  return { kind: "folder", path: dir };
}

const GOOD = "def add(a, b):\n    return a + b\n\n\ndef total(xs):\n    return sum(xs)\n";
const WRONG = "def add(a, b):\n    return a + b\n\n\ndef total(xs):\n    return 0\n";

describe("evaluate: the four verdicts", () => {
  it("resolved: official tests and every probe pass", async () => {
    // A private temp folder: other test files evaluate the same task at the same time.
    const own = tmp("pg-own-tmp-");
    // The sandbox's user (nobody) must be able to reach the evaluation folder inside it.
    chmodSync(own, 0o711);
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = own;
    const r = await run(patch("reference")).finally(() => {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    });
    expect(r.verdict).toBe("resolved");
    expect(r.official?.counts).toEqual({ total: 2, passed: 2, failed: 0, errors: 0, skipped: 0 });
    expect(r.probes.map((p) => [p.id, p.status])).toEqual([
      ["total-value", "passed"],
      ["input-unchanged", "passed"],
      ["total-speed", "passed"],
    ]);
    expect(r.task.probeSet).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(r.environment.python).toMatch(/^3\./);
    // The evaluation folder is gone, and the inputs were not written to (port claims live outside
    // $TMPDIR, in the runner's one folder: runner-claims.ts).
    expect(readdirSync(own)).toEqual([]);
    expect(existsSync(join(TINY_TASK, "base", "sumlib", "__pycache__"))).toBe(false);
  });

  it("official-failed: probes are skipped unless asked for", async () => {
    const r = await run(patch("fails-official"));
    expect(r.verdict).toBe("official-failed");
    expect(r.official?.failing).toMatchObject([{ name: "test_total", file: "tests/test_sumlib.py", kind: "failure" }]);
    expect(r.probes).toEqual([]);
    const all = await run(patch("fails-official"), { alwaysProbe: true });
    expect(all.verdict).toBe("official-failed");
    expect(all.probes.find((p) => p.id === "total-value")?.status).toBe("failed");
  });

  it("probe-rejected: passes the official tests, a state probe fails with a location", async () => {
    const r = await run(patch("mutates-input"));
    expect(r.verdict).toBe("probe-rejected");
    expect(r.official?.passed).toBe(true);
    expect(r.probes.find((p) => p.id === "input-unchanged")).toMatchObject({ status: "failed", category: "state", location: { path: "sumlib/__init__.py", line: 5 }, measured: { len_after: 0 } });
  });

  it("error: the harness cannot run (no interpreter)", async () => {
    const r = await run(patch("reference"), { python: "/nonexistent/python3" });
    expect(r.verdict).toBe("error");
    expect(r.error).toMatchObject({ phase: "environment" });
    expect(r.error?.message).toContain("not found");
  });

  it("error: the runner lacks what the task requires; nothing runs, and what setup found is kept", async () => {
    const needs = { ...task, spec: { ...task.spec, requires: { gpus: 64 } } };
    const phases: string[] = [];
    const r = await run(patch("reference"), { task: needs, onEvent: (e) => e.type === "phase-start" && phases.push(e.phase) });
    expect(r.verdict).toBe("error");
    expect(r.error).toMatchObject({ phase: "requires" });
    expect(r.error?.message).toContain("gpus: 64 (the runner gives the job");
    expect(phases).toEqual(["workspace", "verdict"]);
    expect([r.official, r.probes, r.jobs, r.gpuSeconds]).toEqual([null, [], null, 0]);
    // The host facts were read before the refusal, so the result says what the runner has.
    expect(r.environment.python).toMatch(/^3\./);
    expect(r.environment).toMatchObject({ backend: "gloo", worldSize: 1, sandboxed: false });
  });
});

describe("evaluate: bad input", () => {
  it("refuses a world size below the task's minRanks before running anything", async () => {
    const twoRanks = { ...task, spec: { ...task.spec, minRanks: 2 } };
    const events: string[] = [];
    const err = await evaluate({ task: twoRanks, submission: patch("reference"), kitDir: KIT, worldSize: 1, onEvent: (e) => events.push(e.type) }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).message).toContain("--world-size 1 is too few ranks for task tiny-sum: it needs at least 2 (minRanks in");
    expect((err as InputError).where).toMatchObject({ field: "minRanks" });
    expect(events).toEqual([]);
  });
});

describe("evaluate: measurement and anti-tamper", () => {
  it("re-measures a failing time probe and fails it on two of three", async () => {
    const events: string[] = [];
    const r = await run(patch("slow"), { onEvent: (e) => e.type === "probe-start" && events.push(`${e.probe}#${e.attempt}`) });
    expect(r.verdict).toBe("probe-rejected");
    expect(r.probes.find((p) => p.id === "total-speed")).toMatchObject({ status: "failed", attempts: 2 });
    expect(events).toEqual(["probe_state#1", "probe_time#1", "probe_time#2"]);
  });

  it("restores edited official tests before running them", async () => {
    const r = await run(tree({ "sumlib/__init__.py": WRONG, "tests/test_sumlib.py": "def test_nothing():\n    assert True\n" }));
    expect(r.verdict).toBe("official-failed");
    expect(r.workspaceResets).toEqual([{ path: "tests/test_sumlib.py", action: "restored", why: expect.stringContaining("official test files") }]);
  });

  it("removes a conftest.py that marks every test passed", async () => {
    const conftest = [
      "import pytest",
      "@pytest.hookimpl(hookwrapper=True)",
      "def pytest_runtest_makereport(item, call):",
      "    outcome = yield",
      "    outcome.get_result().outcome = 'passed'",
      "",
    ].join("\n");
    const r = await run(tree({ "sumlib/__init__.py": WRONG, "conftest.py": conftest }));
    expect(r.verdict).toBe("official-failed");
    expect(r.workspaceResets.map((x) => [x.path, x.action])).toEqual([["conftest.py", "removed"]]);
  });

  it("is not fooled by forged PASSED lines and exit 0 without running the tests", async () => {
    const forged = `import os, sys\nprint("tests/test_sumlib.py::test_total PASSED\\n===== 2 passed in 0.01s =====")\nsys.stdout.flush()\nos._exit(0)\n${GOOD}`;
    const r = await run(tree({ "sumlib/__init__.py": forged }));
    expect(r.verdict).toBe("official-failed");
    expect(r.official).toMatchObject({ exitCode: 0, reportFound: false });
    expect(r.official?.reason).toMatch(/no JUnit report/);
  });

  it("kills a hanging test run at its timeout, with every process it started", async () => {
    const short = { ...task, spec: { ...task.spec, official: { ...task.spec.official, timeout: 3 } } };
    const hang = `import subprocess, sys, time\nsubprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])\ntime.sleep(600)\n${GOOD}`;
    const t0 = Date.now();
    const r = await evaluate({ task: short, submission: tree({ "sumlib/__init__.py": hang }), kitDir: KIT });
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(r.verdict).toBe("official-failed");
    expect(r.official?.limit).toBe("wall-clock");
    const strays = execFileSync("ps", ["-eo", "args"]).toString().split("\n").filter((l) => l.includes("time.sleep(600)"));
    expect(strays).toEqual([]);
  });

  it("keeps what probes print off the result", async () => {
    const r = await run(patch("reference"));
    expect(JSON.stringify(r)).not.toContain("CANARY-PROBE-7f3a9c");
  });

  it("never passes runner secrets to submission code", async () => {
    process.env.GITHUB_TOKEN = "ghs_secret_token_value";
    try {
      const leak = `import os\nassert "GITHUB_TOKEN" not in os.environ, "token leaked"\n${GOOD}`;
      expect((await run(tree({ "sumlib/__init__.py": leak }))).verdict).toBe("resolved");
    } finally {
      delete process.env.GITHUB_TOKEN;
    }
  });

  it("runs sandboxed and records the memory of record, measured outside the run", async () => {
    const r = await run(patch("reference"));
    expect(r.environment.sandboxed).toBe(true);
    expect(r.environment.cgroup).toBe(findControllers() ? `v${findControllers()?.version}` : null);
    expect(r.official?.memorySource).toBe(findControllers() ? "cgroup" : "sampled");
    expect(r.official?.peakMemoryBytes).toBeGreaterThan(1 << 20);
  });

  it("removes a hook the official run planted for the probe processes", async () => {
    const planter = `import os
if "PROBEGATE_RESULTS" not in os.environ:
    with open("sitecustomize.py", "w") as f:
        f.write("import os\\nos._exit(7)\\n")
${GOOD}`;
    const r = await run(tree({ "sumlib/__init__.py": planter }));
    expect(r.verdict, JSON.stringify(r.official)).toBe("resolved");
    expect(r.workspaceResets).toEqual([{ path: "sitecustomize.py", action: "removed", why: expect.stringMatching(/^after the official tests: /) }]);
  });

  it("evaluates a git repository at a ref, and records its commit", async () => {
    const repo = join(tmp(), "repo");
    cpSync(join(TINY_TASK, "base"), repo, { recursive: true });
    const g = (...args: string[]) => execFileSync("git", ["-c", "user.email=a@b", "-c", "user.name=a", ...args], { cwd: repo }).toString().trim();
    g("init", "-q", "-b", "main");
    g("add", "-A");
    g("commit", "-qm", "base");
    g("checkout", "-qb", "agent/fix");
    writeFileSync(join(repo, "sumlib", "__init__.py"), GOOD);
    g("commit", "-qam", "fix");
    const sha = g("rev-parse", "HEAD");
    g("checkout", "-q", "main");
    const r = await run({ kind: "git", repo, ref: "agent/fix" });
    expect(r.verdict).toBe("resolved");
    expect(r.submission).toMatchObject({ kind: "git", sha, ref: "agent/fix" });
    expect(readFileSync(join(repo, "sumlib", "__init__.py"), "utf8")).not.toContain("total");
  });
});
