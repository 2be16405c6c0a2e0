import { mkdirSync, readFileSync, writeFileSync, cpSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { demoCases, demoCommand } from "../../src/cli/demo-command.js";
import { compareToExpectation } from "../../src/core/demo-expectation.js";
import { FIXTURES, ROOT, sampleResult, tmp } from "../helpers.js";

/** A checkout-shaped root holding the tiny fixture task and its example submissions. */
function fixtureRoot(expected: string): string {
  const root = tmp();
  cpSync(join(FIXTURES, "tasks", "tiny-sum"), join(root, "tasks", "tiny-sum"), { recursive: true });
  cpSync(join(FIXTURES, "probes"), join(root, "probes"), { recursive: true });
  cpSync(join(ROOT, "probes", "kit"), join(root, "probes", "kit"), { recursive: true });
  const ex = join(root, "examples", "submissions", "tiny-sum");
  mkdirSync(ex, { recursive: true });
  cpSync(join(FIXTURES, "submissions", "tiny-sum"), ex, { recursive: true });
  writeFileSync(join(ex, "expected.yml"), expected);
  return root;
}

describe("compareToExpectation", () => {
  it("matches verdict and exactly the failed categories", () => {
    expect(compareToExpectation(sampleResult(), { submission: "x", verdict: "probe-rejected", failedCategories: ["memory"] })).toEqual([]);
    expect(compareToExpectation(sampleResult(), { submission: "x", verdict: "probe-rejected", failedCategories: ["memory", "state"] })).toEqual([
      "failed categories [memory], expected [memory, state]",
    ]);
    expect(compareToExpectation(sampleResult(), { submission: "x", verdict: "resolved", failedCategories: [] })).toEqual(["verdict probe-rejected, expected resolved"]);
  });
});

describe("probegate demo", () => {
  it("evaluates every example, writes reports, and exits 0 when all are as expected", async () => {
    const root = fixtureRoot(
      "- submission: reference.patch\n  verdict: resolved\n- submission: mutates-input.patch\n  verdict: probe-rejected\n  failedCategories: [state]\n",
    );
    const out = join(root, "out");
    let stdout = "";
    let stderr = "";
    const code = await demoCommand({ root, outDir: out }, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s) });
    expect(code).toBe(0);
    expect(stderr).toMatch(/\[1\/2\] tiny-sum \/ reference[\s\S]*▸ official tests[\s\S]*\[2\/2\] tiny-sum \/ mutates-input/);
    expect(stdout).toContain("2 of 2 verdicts as expected; 1 submissions passed every official test and were caught by hidden probes.");
  });

  it("exits 1 when a verdict differs from the expectation", async () => {
    const root = fixtureRoot("- submission: mutates-input.patch\n  verdict: resolved\n");
    let stdout = "";
    const code = await demoCommand({ root, outDir: join(root, "out") }, { stdout: (s) => (stdout += s), stderr: () => {} });
    expect(code).toBe(1);
    expect(stdout).toContain("0 of 1 verdicts as expected");
  });

  it("names the file and line of a bad expectation", () => {
    const root = fixtureRoot("- submission: reference.patch\n  verdict: accepted\n");
    expect(() => demoCases(root)).toThrow(/expected\.yml:2: 0\.verdict/);
    const missing = fixtureRoot("- submission: nothere.patch\n  verdict: resolved\n");
    expect(() => demoCases(missing)).toThrow(/submission 'nothere\.patch' does not exist/);
  });
});

describe("probegate demo on a runner that lacks what a task requires", () => {
  it("reports the task's examples as skipped, naming the requirement, and does not count them", async () => {
    const root = fixtureRoot("- submission: reference.patch\n  verdict: resolved\n");
    const spec = join(root, "tasks", "tiny-sum", "task.yml");
    writeFileSync(spec, `${readFileSync(spec, "utf8")}requires:\n  torch: ">=99"\n  gpus: 64\n`);
    let out = "";
    let err = "";
    const code = await demoCommand({ root, outDir: join(root, "out"), unsandboxed: false }, { stdout: (s) => (out += s), stderr: (s) => (err += s) });
    expect(code).toBe(0);
    expect(err).toContain("skipped: the runner lacks what the task requires");
    expect(out).toContain("0 of 0 verdicts as expected");
    expect(out).toMatch(/skipped 1 examples of tiny-sum \(not counted\): the runner lacks what task tiny-sum requires .*torch >=99 \(the runner has torch [^)]+\); gpus: 64 \(the runner gives the job 0 GPUs\)/);
  });
});
