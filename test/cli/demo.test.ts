import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { demoCommand, demoSet, packExamples } from "../../src/cli/demo-command.js";
import { compareToExpectation, ExpectationSchema } from "../../src/core/demo-expectation.js";
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

/** The reference in the quick set, a flawed example only in the full one. */
const TWO_EXAMPLES = "- submission: reference.patch\n  quick: true\n  verdict: resolved\n- submission: mutates-input.patch\n  verdict: probe-rejected\n  failedCategories: [state]\n";

describe("compareToExpectation", () => {
  it("matches verdict and exactly the failed categories", () => {
    expect(compareToExpectation(sampleResult(), { verdict: "probe-rejected", failedCategories: ["memory"] })).toEqual([]);
    expect(compareToExpectation(sampleResult(), { verdict: "probe-rejected", failedCategories: ["memory", "state"] })).toEqual([
      "failed categories [memory], expected [memory, state]",
    ]);
    expect(compareToExpectation(sampleResult(), { verdict: "resolved", failedCategories: [] })).toEqual(["verdict probe-rejected, expected resolved"]);
  });
});

describe("the quick set", () => {
  it("is a boolean field, false unless set", () => {
    expect(ExpectationSchema.parse({ submission: "a.patch", verdict: "resolved" }).quick).toBe(false);
    expect(ExpectationSchema.parse({ submission: "a.patch", verdict: "resolved", quick: true }).quick).toBe(true);
  });

  it("rejects a quick that is not a boolean, naming the file, line and field", () => {
    const root = fixtureRoot("- submission: reference.patch\n  verdict: resolved\n  quick: yes\n");
    const file = join(root, "examples", "submissions", "tiny-sum", "expected.yml");
    let message = "";
    try {
      packExamples(root);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain(`${file}:3: 0.quick:`);
    expect(message).toMatch(/expected boolean/);
  });

  it("holds the examples marked quick by default, every example with all", () => {
    const examples = packExamples(fixtureRoot(TWO_EXAMPLES));
    expect(examples.map((c) => c.expectation.submission)).toEqual(["reference.patch", "mutates-input.patch"]);
    expect(demoSet(examples).map((c) => c.expectation.submission)).toEqual(["reference.patch"]);
    expect(demoSet(examples, { only: ["tiny-sum"] }).map((c) => c.expectation.submission)).toEqual(["reference.patch"]);
    expect(demoSet(examples, { all: true })).toEqual(examples);
  });

  it("is an error when nothing is marked quick, or nothing of a task asked for by --task", () => {
    const root = fixtureRoot("- submission: reference.patch\n  verdict: resolved\n");
    const examples = packExamples(root);
    expect(() => demoSet(examples)).toThrow(/no example is marked 'quick: true' in .*examples\/submissions\/\*\/expected\.yml; add --all/);
    expect(() => demoSet(examples, { only: ["tiny-sum"] })).toThrow(
      `--task tiny-sum: none of its 1 examples is marked 'quick: true' in ${join(root, "examples", "submissions", "tiny-sum", "expected.yml")}; add --all to evaluate every one`,
    );
    expect(demoSet(examples, { all: true, only: ["tiny-sum"] })).toHaveLength(1);
  });

  it("holds only the examples named (quick or not, .patch optional), and names the known ones when one is not there", () => {
    const examples = packExamples(fixtureRoot(TWO_EXAMPLES));
    expect(demoSet(examples, { examples: ["mutates-input"] }).map((c) => c.expectation.submission)).toEqual(["mutates-input.patch"]);
    expect(demoSet(examples, { examples: ["mutates-input.patch", "reference"] }).map((c) => c.expectation.submission)).toEqual(["reference.patch", "mutates-input.patch"]);
    expect(() => demoSet(examples, { examples: ["reference", "nope"], only: ["tiny-sum"] })).toThrow(
      "--example: no example called 'nope' in tiny-sum; the examples are: mutates-input, reference",
    );
  });
});

describe("probegate demo", () => {
  it("evaluates the quick set by default and says so first", async () => {
    const root = fixtureRoot(TWO_EXAMPLES);
    let stdout = "";
    let stderr = "";
    const code = await demoCommand({ root, outDir: join(root, "out") }, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s) });
    expect(code).toBe(0);
    expect(stderr.split("\n")[0]).toBe(`probegate demo: the quick set, 1 of 2 example submissions of 1 task (--all for every one); reports go to ${join(root, "out")}`);
    expect(stderr).toContain("[1/1] tiny-sum / reference");
    expect(stderr).not.toContain("mutates-input");
    expect(stdout).toContain("1 of 1 verdicts as expected; 0 submissions passed every official test and were caught by hidden probes.");
  });

  it("evaluates every example with --all, writes reports, and exits 0 when all are as expected", async () => {
    const root = fixtureRoot(TWO_EXAMPLES);
    const out = join(root, "out");
    let stdout = "";
    let stderr = "";
    const code = await demoCommand({ root, outDir: out, all: true }, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s) });
    expect(code).toBe(0);
    expect(stderr.split("\n")[0]).toBe(`probegate demo: all 2 example submissions of 1 task (--all); reports go to ${out}`);
    expect(stderr).toMatch(/\[1\/2\] tiny-sum \/ reference[\s\S]*▸ official tests[\s\S]*\[2\/2\] tiny-sum \/ mutates-input/);
    expect(stdout).toContain("2 of 2 verdicts as expected; 1 submissions passed every official test and were caught by hidden probes.");
    expect(JSON.parse(readFileSync(join(out, "tiny-sum", "mutates-input.json"), "utf8")).verdict).toBe("probe-rejected");
  });

  it("--list prints the examples it would evaluate, task/name a line, and evaluates none", async () => {
    const root = fixtureRoot(TWO_EXAMPLES);
    let stdout = "";
    let stderr = "";
    const flags = { root, outDir: join(root, "out"), list: true };
    expect(await demoCommand(flags, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s) })).toBe(0);
    expect(stdout).toBe("tiny-sum/reference\n");
    stdout = "";
    expect(await demoCommand({ ...flags, all: true }, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s) })).toBe(0);
    expect(stdout).toBe("tiny-sum/reference\ntiny-sum/mutates-input\n");
    expect(stderr).toBe("");
    expect(existsSync(join(root, "out"))).toBe(false);
  });

  it("--example evaluates only the named example, even one outside the quick set", async () => {
    const root = fixtureRoot(TWO_EXAMPLES);
    let stdout = "";
    const code = await demoCommand({ root, outDir: join(root, "out"), example: ["mutates-input"] }, { stdout: (s) => (stdout += s), stderr: () => {} });
    expect(code).toBe(0);
    expect(stdout).toContain("1 of 1 verdicts as expected; 1 submissions passed every official test and were caught by hidden probes.");
    expect(existsSync(join(root, "out", "tiny-sum", "reference.json"))).toBe(false);
  });

  it("exits 1 when a verdict differs from the expectation", async () => {
    const root = fixtureRoot("- submission: mutates-input.patch\n  quick: true\n  verdict: resolved\n");
    let stdout = "";
    const code = await demoCommand({ root, outDir: join(root, "out") }, { stdout: (s) => (stdout += s), stderr: () => {} });
    expect(code).toBe(1);
    expect(stdout).toContain("0 of 1 verdicts as expected");
  });

  it("names the file and line of a bad expectation", () => {
    const root = fixtureRoot("- submission: reference.patch\n  verdict: accepted\n");
    expect(() => packExamples(root)).toThrow(/expected\.yml:2: 0\.verdict/);
    const missing = fixtureRoot("- submission: nothere.patch\n  verdict: resolved\n");
    expect(() => packExamples(missing)).toThrow(/submission 'nothere\.patch' does not exist/);
  });
});

describe("probegate demo on a runner that lacks what a task requires", () => {
  it("reports the task's examples as skipped, naming the requirement, and does not count them", async () => {
    const root = fixtureRoot("- submission: reference.patch\n  quick: true\n  verdict: resolved\n");
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
