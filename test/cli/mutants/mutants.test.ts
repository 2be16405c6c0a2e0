import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FIXTURES, tmp } from "../../helpers.js";
import { cli } from "../run-cli.js";

/** tiny-mutants in a folder of its own (task, probes, reference), so a test may edit it. */
function copy(): { task: string; examples: string; cache: string } {
  const root = tmp("pg-mutants-");
  cpSync(join(FIXTURES, "tasks", "tiny-mutants"), join(root, "tasks", "tiny-mutants"), { recursive: true });
  cpSync(join(FIXTURES, "probes", "tiny-mutants"), join(root, "probes", "tiny-mutants"), { recursive: true });
  cpSync(join(FIXTURES, "submissions", "tiny-mutants"), join(root, "examples", "submissions", "tiny-mutants"), { recursive: true });
  return { task: join(root, "tasks", "tiny-mutants"), examples: join(root, "examples", "submissions"), cache: join(root, "cache") };
}

const run = (c: ReturnType<typeof copy>, ...more: string[]) =>
  cli("validate", "--mutants", c.task, "--examples", c.examples, "--cache", c.cache, "--format", "json", "--jobs", "2", "--mutant-timeout", "20", ...more);

describe("probegate validate --mutants", () => {
  it("kills a known share of tiny-mutants' mutants: exact counts and score, survivors with their diffs, a hang timed out, the equivalent mark; exit 1 under the threshold; a second run evaluates nothing; a changed probe re-runs only what reached the probes", async () => {
    const c = copy();
    const first = await run(c);
    const [report] = JSON.parse(first.out).tasks;
    expect(report.mutants).toEqual({
      total: 22,
      killedByOfficial: 13,
      killedByProbes: 5,
      survived: 2,
      equivalent: 1,
      timedOut: 1,
      officialSurvivalRate: 8 / 22,
      probeScore: 5 / 7,
    });
    expect(first.code).toBe(1);
    // The boundary that fits exactly: 1000 items refused by `>=` and by `> 999`; the probe only tries 1001.
    expect(report.survivors.map((s: { id: string; change: { after: string } }) => [s.id, s.change.after])).toEqual([
      ["core/ReplaceComparisonOperator_Gt_GtE@sumlib/__init__.py:6#0", "if len(xs) >= 1000:"],
      ["core/NumberReplacer@sumlib/__init__.py:6#1", "if len(xs) > 999:"],
    ]);
    expect(report.survivors[0].location).toBe("sumlib/__init__.py:6:16");
    expect(report.survivors[0].diff).toContain("+    if len(xs) >= 1000:\n");
    expect(report.timedOut.map((t: { id: string; detail: string }) => [t.id, t.detail])).toEqual([["probegate/RemoveStatement@sumlib/__init__.py:13#0", "official tests stopped by the wall-clock limit"]]);
    expect(report.equivalents.map((e: { id: string }) => e.id)).toEqual(["probegate/RemoveStatement@sumlib/__init__.py:9#0"]);
    expect(report.findings).toEqual([expect.objectContaining({ level: "error", message: expect.stringContaining("probeScore 0.714 is under the threshold 0.9: 2 mutants pass") })]);
    expect(report.run).toMatchObject({ evaluated: 22, cached: 0, notEvaluated: 0, mutantTimeoutS: 20, jobs: 2 });

    // The cache: the same mutants, probes and spec → nothing evaluated, the same figures.
    const second = await run(c);
    const [again] = JSON.parse(second.out).tasks;
    expect(again.run).toMatchObject({ evaluated: 0, cached: 22 });
    expect(again.mutants).toEqual(report.mutants);
    expect(second.err).not.toMatch(/^  reference .* …$/m);
    expect(first.err).toMatch(/^  reference .*reference\.patch …$/m);

    // A changed probe re-keys the mutants that reached the probes (8) and the official hang (its
    // wall clock may change with the probes); the 13 the official tests killed stay cached.
    const probe = join(c.task, "..", "..", "probes", "tiny-mutants", "probe_total.py");
    writeFileSync(probe, `${readFileSync(probe, "utf8")}\n# a changed probe set\n`);
    const third = await run(c);
    const [changed] = JSON.parse(third.out).tasks;
    expect(changed.run).toMatchObject({ evaluated: 9, cached: 13 });
    expect(changed.mutants).toEqual(report.mutants);

  }, 300_000);

  it("starts no reference past --budget: a task reached after the deadline is reported as not evaluated (exit 1), not evaluated anyway", async () => {
    const c = copy();
    // A second task: the same files under another spec (its own hash), so its reference is not cached either.
    const other = join(c.task, "..", "..", "again", "tiny-mutants");
    cpSync(c.task, other, { recursive: true });
    writeFileSync(join(other, "task.yml"), `${readFileSync(join(other, "task.yml"), "utf8")}\n# another spec\n`);
    const r = await cli("validate", "--mutants", c.task, other, "--examples", c.examples, "--cache", c.cache, "--format", "json", "--jobs", "1", "--mutant-timeout", "20", "--budget", "1");
    expect(r.code).toBe(1);
    const [, second] = JSON.parse(r.out).tasks;
    expect(second.mutants.total).toBe(0);
    expect(second.run).toMatchObject({ evaluated: 0, cached: 0, notEvaluated: 22 });
    expect(second.ok).toBe(false);
    expect(second.findings).toContainEqual({ level: "error", message: expect.stringContaining("reached before tiny-mutants's reference was evaluated: none of its 22 mutants evaluated") });
    // Under load the generation alone may pass the 1 s, so the first task may be skipped as well; the second always is.
    expect(r.err.trimEnd().split("\n").at(-2)).toBe("  tiny-mutants: --budget reached before its reference was evaluated; none of its 22 mutants evaluated");
  }, 120_000);

  it("reports a mark that names no mutant and refuses a mark without a reason, naming the file", async () => {
    const c = copy();
    const marks = join(c.task, "mutants.yml");
    writeFileSync(marks, "equivalent:\n  - id: core/AddNot@sumlib/__init__.py:99#0\n");
    const bad = await run(c);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain("mutants.yml");
    expect(bad.err).toContain("reason");
    expect(existsSync(c.cache)).toBe(false);
  });
});

describe("probegate validate: --mutants flags", () => {
  it("refuses the mutant flags without --mutants, and --power's own flags with it", async () => {
    const c = copy();
    const lone = await cli("validate", c.task, "--cache", c.cache);
    expect(lone.code).toBe(2);
    expect(lone.err).toContain("validate: --cache only mean something with --mutants.");
    const mixed = await cli("validate", "--mutants", c.task, "--runs", "3", "--seed", "1");
    expect(mixed.code).toBe(2);
    expect(mixed.err).toContain("validate --mutants: --seed, --runs only mean something with --power.");
  });
});
