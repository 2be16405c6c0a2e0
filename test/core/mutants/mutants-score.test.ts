import { describe, expect, it } from "vitest";
import { classifyMutant } from "../../../src/core/mutants/mutant-outcome.js";
import { MutantsFileSchema, mutantId } from "../../../src/core/mutants/mutants-file.js";
import { scoreMutants, type MutantRecord } from "../../../src/core/mutants/mutants-score.js";
import { addedLines } from "../../../src/core/mutants/patch-lines.js";
import type { MutantOutcome } from "../../../src/core/mutants/mutant-outcome.js";
import type { EvaluationResult } from "../../../src/core/result.js";

function record(line: number, outcome: MutantOutcome, passedOfficial = outcome !== "killedByOfficial"): MutantRecord {
  const m = { operator: "core/AddNot", path: "m.py", line, occurrence: 0 };
  return { ...m, id: mutantId(m), column: 0, diff: "", change: { before: "", after: "" }, outcome, passedOfficial, detail: outcome, durationS: 1, cached: false };
}

describe("addedLines", () => {
  it("numbers the + lines of each hunk in the post-image, a modified line once, deleted files left out", () => {
    const patch = [
      "diff --git a/a.py b/a.py",
      "--- a/a.py",
      "+++ b/a.py",
      "@@ -1,4 +1,5 @@",
      " x = 1",
      "-y = 2",
      "+y = 3",
      "+z = 4",
      " w = 5",
      " v = 6",
      "@@ -10 +11,2 @@",
      "-old",
      "+new",
      "+newer",
      "\\ No newline at end of file",
      "--- a/gone.py",
      "+++ /dev/null",
      "@@ -1 +0,0 @@",
      "-gone",
      "--- /dev/null",
      "+++ b/new.py",
      "@@ -0,0 +1,2 @@",
      "+a",
      "+b",
    ].join("\n");
    expect(addedLines(patch)).toEqual([
      { path: "a.py", lines: [2, 3, 11, 12] },
      { path: "new.py", lines: [1, 2] },
    ]);
    expect(() => addedLines("--- a/x\n+++ b/x\n@@ bad @@\n")).toThrow(/line 3: cannot read the hunk header/);
  });
});

describe("scoreMutants", () => {
  const records = [record(1, "killedByOfficial"), record(2, "killedByProbes"), record(3, "survived"), record(4, "survived"), record(5, "timedOut"), record(6, "timedOut", false)];

  it("counts, the two figures, an equivalent mark; timed-out mutants are neither kills nor survivors", () => {
    const s = scoreMutants(records, [{ id: "core/AddNot@m.py:4#0", reason: "same" }], 0.5, true);
    // 4 pass the official tests (2, 3, 4, 5); 1 equivalent and 1 timed out in the probes leave 2 to kill, 1 killed.
    expect(s.mutants).toEqual({ total: 6, killedByOfficial: 1, killedByProbes: 1, survived: 1, equivalent: 1, timedOut: 2, officialSurvivalRate: 4 / 6, probeScore: 0.5 });
    expect(s.ok).toBe(true);
    expect(s.survivors.map((r) => r.line)).toEqual([3]);
    // The hang in the probes is named, not silently dropped; the one in the official tests is not a probe matter.
    expect(s.findings).toEqual([{ level: "warning", message: expect.stringContaining("1 mutant passed the official tests and then hung in the probes (core/AddNot@m.py:5#0)") }]);
    expect(s.timedOut.map((r) => r.line)).toEqual([5, 6]);
  });

  it("fails under the threshold, on a mark of a killed mutant; warns on a mark that names none", () => {
    const s = scoreMutants(records, [{ id: "core/AddNot@m.py:2#0", reason: "r" }, { id: "core/AddNot@m.py:77#0", reason: "r" }], 0.9, true);
    expect(s.mutants.equivalent).toBe(0);
    expect(s.mutants.probeScore).toBeCloseTo(1 / 3);
    expect(s.ok).toBe(false);
    expect(s.findings.map((f) => f.level)).toEqual(["error", "warning", "warning", "error"]);
    expect(s.findings[0]?.message).toContain("killed by the probes");
    expect(s.findings[1]?.message).toContain("stale mark");
  });

  it("has no probe score when nothing is left to kill, and passes", () => {
    const s = scoreMutants([record(1, "killedByOfficial")], [], 0.9, true);
    expect(s.mutants.probeScore).toBeNull();
    expect(s.ok).toBe(true);
  });
});

describe("classifyMutant", () => {
  const base = { verdict: "probe-rejected", reason: "", official: { passed: true, limit: null, failing: [] }, probes: [] } as unknown as EvaluationResult;
  it("a wall-clock stop is timed out, not a kill, in either phase", () => {
    expect(classifyMutant({ ...base, verdict: "official-failed", official: { ...base.official, passed: false, limit: "wall-clock" } } as EvaluationResult).outcome).toBe("timedOut");
    const stopped = { id: "p.limit", status: "failed", message: "the probe run was stopped by the wall-clock limit while running the submission" };
    expect(classifyMutant({ ...base, probes: [stopped] } as unknown as EvaluationResult)).toMatchObject({ outcome: "timedOut", passedOfficial: true });
    expect(classifyMutant({ ...base, probes: [stopped, { id: "v", status: "failed", message: "wrong" }] } as unknown as EvaluationResult).outcome).toBe("killedByProbes");
  });
  it("a probe that crashes on the mutant kills it; a harness fault leaves it unscored", () => {
    const crashed = { ...base, verdict: "error", probes: [{ id: "p.exit", status: "error", message: "exited 1" }] } as unknown as EvaluationResult;
    expect(classifyMutant(crashed)).toMatchObject({ outcome: "killedByProbes", detail: "probe crashed: p.exit (exited 1)" });
    expect(classifyMutant({ ...crashed, error: { phase: "probes", message: "no rank" } } as EvaluationResult)).toMatchObject({ outcome: "error", detail: "no rank" });
    expect(classifyMutant({ ...base, verdict: "resolved", probes: [{ id: "v", status: "passed", message: "" }] } as unknown as EvaluationResult).outcome).toBe("survived");
  });
});

describe("mutants.yml", () => {
  it("requires a reason and a well-formed id", () => {
    expect(MutantsFileSchema.safeParse({ equivalent: [{ id: "core/AddNot@m.py:4#0" }] }).success).toBe(false);
    expect(MutantsFileSchema.safeParse({ equivalent: [{ id: "AddNot line 4", reason: "r" }] }).success).toBe(false);
    expect(MutantsFileSchema.parse({})).toEqual({ threshold: 0.9, equivalent: [] });
  });
});

describe("renderMutantsText / renderMutantsMarkdown", () => {
  it("print the counts, the two figures, each survivor's change and the findings", async () => {
    const { renderMutantsMarkdown, renderMutantsText, summarise } = await import("../../../src/core/mutants/mutants-report.js");
    const survivor = { ...record(3, "survived"), change: { before: "if n > 1000:", after: "if n >= 1000:" } };
    const s = scoreMutants([record(1, "killedByOfficial"), record(2, "killedByProbes"), survivor], [], 0.9, true);
    const report = {
      task: "t",
      probeSet: "sha256:x",
      ...s,
      survivors: s.survivors.map(summarise),
      equivalents: [],
      timedOut: [],
      errors: [],
      generation: { operators: 3, invalid: 0, duplicate: 0, files: [] },
      run: { evaluated: 3, cached: 0, notEvaluated: 0, mutantTimeoutS: 15, wallS: 60, mutantsPerMinute: 3, jobs: 2 },
    };
    const text = renderMutantsText(report);
    expect(text).toContain("✗ t: 3 mutants of the reference change — 1 killed by the official tests, 1 by the probes, 1 survived, 0 equivalent, 0 timed out");
    expect(text).toContain("officialSurvivalRate 66.7% (pass the official tests)   probeScore 0.500 (threshold 0.9)");
    expect(text).toContain("survived core/AddNot@m.py:3#0 at m.py:3:1\n    - if n > 1000:\n    + if n >= 1000:");
    expect(text).toContain("✗ probeScore 0.500 is under the threshold 0.9");
    expect(renderMutantsMarkdown(report)).toContain("| 3 | 1 | 1 | 1 | 0 | 0 | 66.7% | 0.500 |");
  });
});
