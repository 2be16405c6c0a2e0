import { describe, expect, it } from "vitest";
import type { Expectation } from "../../../src/core/demo-expectation.js";
import { analysePower, cellText, mergePowerReports, type PowerColumnInput } from "../../../src/core/probe-power/probe-power.js";
import { renderPowerMarkdown } from "../../../src/core/probe-power/probe-power-render.js";
import type { CheckStatus } from "../../../src/core/probe-check.js";
import type { EvaluationResult, ProbeResult } from "../../../src/core/result.js";
import { sampleResult } from "../../helpers.js";

type Check = [probe: string, id: string, category: ProbeResult["category"], status: CheckStatus, requirements?: string[]];

/** A result whose checks are exactly `checks`, with the verdict they make. */
function run(checks: Check[], verdict?: EvaluationResult["verdict"]): EvaluationResult {
  const probes = checks.map(([probe, id, category, status, requirements]) => ({ id, category, status, message: "", probe, attempts: 1, durationS: 0.1, requirements: requirements ?? null }));
  const v = verdict ?? (probes.some((p) => p.status === "failed") ? "probe-rejected" : probes.some((p) => p.status === "error") ? "error" : "resolved");
  return sampleResult({ verdict: v, probes });
}

const want = (submission: string, verdict: Expectation["verdict"], failedCategories: Expectation["failedCategories"] = []): Expectation => ({ submission, verdict, failedCategories, quick: false });

/** A good probe set: probe_value catches both flaws and passes the reference. */
const good = (value: CheckStatus, state: CheckStatus, extra: Check[] = []): Check[] => [
  ["probe_value", "total-value", "functional", value, ["total-value"]],
  ["probe_value", "input-unchanged", "state", state, ["input-unchanged"]],
  ...extra,
];

function columns(extra: (col: string) => Check[] = () => []): PowerColumnInput[] {
  return [
    { submission: "reference.patch", expectation: want("reference.patch", "resolved"), results: [run(good("passed", "passed", extra("ref"))), run(good("passed", "passed", extra("ref")))] },
    { submission: "mutates.patch", expectation: want("mutates.patch", "probe-rejected", ["state"]), results: [run(good("passed", "failed", extra("mut")))] },
    { submission: "wrong.patch", expectation: want("wrong.patch", "probe-rejected", ["functional"]), results: [run(good("failed", "passed", extra("wrong")))] },
    { submission: "fails-official.patch", expectation: want("fails-official.patch", "official-failed"), results: [sampleResult({ verdict: "official-failed", probes: [] })] },
  ];
}

describe("analysePower", () => {
  it("passes probes that catch every flaw and leave the reference alone, with the matrix of what each did", () => {
    const report = analysePower("tiny", columns(), ["total-value", "input-unchanged"]);
    expect(report.findings).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.rows.map((r) => [r.probe, r.check, r.cells.map((c, i) => cellText(c, report.columns[i]?.runs ?? 0))])).toEqual([
      ["probe_value", "input-unchanged", ["0/2 failed", "FAIL", "pass", "—"]],
      ["probe_value", "total-value", ["0/2 failed", "pass", "FAIL", "—"]],
    ]);
    expect(report.falseRejections).toEqual([{ submission: "reference.patch", runs: 2, rejected: 0, byCheck: {} }]);
    expect(report.columns[0]).toMatchObject({ correct: true, runs: 2, verdicts: { resolved: 2 } });
    expect(report.scope).toBe("all");
  });

  it("fails a probe file none of whose checks catches a flaw; a single idle check of a useful probe is a warning", () => {
    const idle = (): Check[] => [["probe_idle", "callable", "structure", "passed", ["total-value"]], ["probe_value", "types", "structure", "passed"]];
    const report = analysePower("tiny", columns(idle), ["total-value", "input-unchanged"]);
    expect(report.ok).toBe(false);
    expect(report.findings).toEqual([
      expect.objectContaining({ level: "error", kind: "probe-catches-nothing", subject: "probe_idle", message: "probe probe_idle catches nothing: none of its 1 checks fails any of the 2 flawed examples" }),
      expect.objectContaining({ level: "warning", kind: "check-catches-nothing", subject: "probe_value/types" }),
    ]);
  });

  it("fails a check that fails or errors on a correct submission, and counts the false rejections per run", () => {
    const cols = columns();
    const ref = cols[0] as PowerColumnInput;
    ref.results = [run(good("passed", "passed")), run(good("passed", "failed")), run(good("error", "passed"))];
    const report = analysePower("tiny", cols, ["total-value", "input-unchanged"]);
    expect(report.falseRejections).toEqual([{ submission: "reference.patch", runs: 3, rejected: 2, byCheck: { "input-unchanged": 1, "total-value": 1 } }]);
    expect(report.findings.map((f) => [f.kind, f.subject])).toEqual([
      ["fails-correct", "probe_value/input-unchanged"],
      ["fails-correct", "probe_value/total-value"],
      ["unexpected-verdict", "reference.patch"],
    ]);
    expect(report.findings[1]?.message).toBe("check total-value (probe_value, functional) errored 1 of 3 runs of the correct submission reference.patch");
    expect(report.findings[2]?.message).toMatch(/^reference\.patch: 2 of 3 runs not resolved \(probe-rejected 1×, error 1×\)/);
    const cell = report.rows.find((r) => r.check === "input-unchanged")?.cells[0];
    expect(cellText(cell as NonNullable<typeof cell>, 3)).toBe("1/3 failed");
  });

  it("fails a flawed example that no check of its expected category catches, even when another category does", () => {
    const cols = columns();
    (cols[1] as PowerColumnInput).expectation = want("mutates.patch", "probe-rejected", ["state", "time"]);
    const report = analysePower("tiny", cols, ["total-value", "input-unchanged"]);
    expect(report.findings).toEqual([expect.objectContaining({ level: "error", kind: "flaw-not-caught", subject: "mutates.patch", message: "flawed example mutates.patch is not caught by any time check (expected: state, time)" })]);
  });

  it("fails a requirement no check ran on the reference, and a requirement a check names but the task does not declare", () => {
    const cols = columns((c) => [["probe_extra", "skipped-check", "functional", c === "ref" ? "skipped" : "failed", ["empty-list"]], ["probe_value", "bonus", "state", "passed", ["not-declared"]]]);
    const report = analysePower("tiny", cols, ["total-value", "input-unchanged", "empty-list", "never-named"]);
    expect(report.findings.filter((f) => f.kind.startsWith("requirement")).map((f) => f.message)).toEqual([
      "requirement empty-list is named by no check that ran on the reference",
      "requirement never-named is named by no check that ran on the reference",
      "check bonus (probe_value) names requirement not-declared, which task.yml does not declare",
    ]);
  });

  it("says a flawed example cut off by --budget was not evaluated, instead of calling it not caught", () => {
    const cols = columns();
    cols[1] = { ...(cols[1] as PowerColumnInput), results: [] };
    const report = analysePower("tiny", cols, ["total-value", "input-unchanged"]);
    expect(report.ok).toBe(false);
    // input-unchanged catches only the flaw that did not run: on what ran it caught nothing (a warning).
    expect(report.findings.map((f) => [f.kind, f.subject])).toEqual([["check-catches-nothing", "probe_value/input-unchanged"], ["not-evaluated", "mutates.patch"]]);
    expect(report.findings[1]?.message).toMatch(/not evaluated \(the --budget ran out first\)/);
    // The probe that catches the flaw that ran is still judged on that one.
    cols[2] = { ...(cols[2] as PowerColumnInput), results: [] };
    const none = analysePower("tiny", cols, ["total-value", "input-unchanged"]);
    expect(none.findings.map((f) => f.kind)).toEqual(["probe-catches-nothing", "not-evaluated", "not-evaluated"]);
    expect(none.findings[0]?.message).toMatch(/any of the 0 flawed examples that were evaluated/);
  });

  it("with scope correct-only, leaves the flawed columns and the catch findings out but still fails a check that fails a correct run", () => {
    const idle = (): Check[] => [["probe_idle", "callable", "structure", "passed", ["total-value"]]];
    const cols = columns(idle);
    // Flawed inputs handed in anyway (even with results) are not part of a correct-only report.
    const full = analysePower("tiny", cols, ["total-value", "input-unchanged"]);
    expect(full.findings.map((f) => f.kind)).toEqual(["probe-catches-nothing"]);
    const clean = analysePower("tiny", cols, ["total-value", "input-unchanged"], "correct-only");
    expect(clean).toMatchObject({ scope: "correct-only", ok: true, findings: [] });
    expect(clean.columns.map((c) => c.submission)).toEqual(["reference.patch"]);
    expect(clean.rows.every((r) => r.cells.length === 1)).toBe(true);
    const ref = cols[0] as PowerColumnInput;
    ref.results = [run(good("passed", "passed", idle())), run(good("passed", "failed", idle())), run(good("passed", "passed", idle()), "official-failed")];
    const report = analysePower("tiny", [...cols, { submission: "cut.patch", expectation: want("cut.patch", "probe-rejected", ["time"]), results: [] }], ["total-value", "input-unchanged", "never-named"], "correct-only");
    expect(report.ok).toBe(false);
    expect(report.findings.map((f) => [f.kind, f.subject])).toEqual([
      ["fails-correct", "probe_value/input-unchanged"],
      ["unexpected-verdict", "reference.patch"],
      ["requirement-unchecked", "never-named"],
    ]);
    expect(report.falseRejections).toEqual([{ submission: "reference.patch", runs: 3, rejected: 2, byCheck: { "input-unchanged": 1 } }]);
    // A correct example the --budget cut off is still reported as not evaluated.
    const cut = analysePower("tiny", [{ ...ref, results: [] }, ...cols.slice(1)], ["total-value", "input-unchanged"], "correct-only");
    expect(cut.findings.map((f) => [f.kind, f.subject])).toEqual([["not-evaluated", "reference.patch"], ["requirement-unchecked", "total-value"], ["requirement-unchecked", "input-unchanged"]]);
  });

  it("says at the top of a correct-only markdown report that it measured false rejections only", () => {
    const md = renderPowerMarkdown(analysePower("tiny", columns(), ["total-value", "input-unchanged"], "correct-only"));
    expect(md.split("\n").slice(0, 3)).toEqual([
      "### ✅ Probe power — `tiny` (false rejections only)",
      "",
      "> Correct-only run: only the correct submissions were evaluated, so this measures false rejections only; what the probes catch (their power) needs a run without --correct-only.",
    ]);
    expect(md).toContain("| probe | check | category | reference ✓ ×2 |\n");
    expect(md).toContain("what the probes catch was not measured.");
    expect(md).not.toContain("Every probe catches a flaw");
    expect(renderPowerMarkdown(analysePower("tiny", columns(), ["total-value", "input-unchanged"]))).not.toContain("Correct-only");
  });

  it("renders the matrix and the findings as markdown", () => {
    const md = renderPowerMarkdown(analysePower("tiny", columns(), ["total-value", "input-unchanged", "empty-list"]));
    expect(md).toContain("### ❌ Probe power — `tiny`");
    expect(md).toContain("| probe | check | category | reference ✓ ×2 | mutates | wrong | fails-official |");
    expect(md).toContain("| probe_value | input-unchanged | state | 0/2 failed | FAIL | pass | — |");
    expect(md).toContain("|  | expected |  | resolved | probe-rejected [state] | probe-rejected [functional] | official-failed |");
    expect(md).toContain("- requirement empty-list is named by no check that ran on the reference");
  });
});

describe("unexpected verdicts say why", () => {
  it("names the first failing official test and its message, so the report alone says what went wrong", () => {
    const base = sampleResult({ verdict: "official-failed", probes: [] });
    const failed: EvaluationResult = {
      ...base,
      reason: "the official tests failed",
      official: {
        ...(base.official as NonNullable<EvaluationResult["official"]>),
        passed: false,
        reason: "1 of 9 tests failed",
        failing: [{ name: "test_sync_many[4]", classname: "tests.test_sync", file: "tests/test_sync.py", line: 40, kind: "failure", message: "AssertionError: rank 3 got stale weights\nmore" }],
      },
    };
    const report = analysePower("tiny", [{ submission: "slow.patch", expectation: want("slow.patch", "probe-rejected", ["time"]), results: [failed] }], []);
    const finding = report.findings.find((f) => f.kind === "unexpected-verdict");
    expect(finding?.message).toBe("slow.patch: its run not probe-rejected (official-failed 1×) — 1 of 9 tests failed; first: test_sync_many[4] — AssertionError: rank 3 got stale weights");
  });

  it("names the failed checks of a correct submission that was rejected", () => {
    const report = analysePower("tiny", [{ submission: "reference.patch", expectation: want("reference.patch", "resolved"), results: [run(good("passed", "failed"))] }], ["total-value", "input-unchanged"]);
    expect(report.findings.find((f) => f.kind === "unexpected-verdict")?.message).toMatch(/— .*: input-unchanged failed$/);
  });
});

describe("mergePowerReports", () => {
  const REQS = ["total-value", "input-unchanged"];

  it("judges the summed matrix again: a flaw one call did not reach is caught in another, and the runs of every call add up", () => {
    // Call 1 was cut short before mutates.patch; call 2 reached it but not wrong.patch.
    const one = columns();
    one[1] = { ...(one[1] as PowerColumnInput), results: [] };
    const two = columns();
    two[2] = { ...(two[2] as PowerColumnInput), results: [] };
    const a = analysePower("tiny", one, REQS);
    const b = analysePower("tiny", two, REQS);
    expect(a.findings.map((f) => f.kind)).toEqual(["check-catches-nothing", "not-evaluated"]);
    expect(b.findings.map((f) => f.kind)).toEqual(["check-catches-nothing", "not-evaluated"]);
    const merged = mergePowerReports([a, b]);
    expect(merged.findings).toEqual([]);
    expect(merged.ok).toBe(true);
    expect(merged.columns.map((c) => [c.submission, c.runs])).toEqual([["reference.patch", 4], ["mutates.patch", 1], ["wrong.patch", 1], ["fails-official.patch", 2]]);
    expect(merged.rows.map((r) => [r.check, r.cells.map((c, i) => cellText(c, merged.columns[i]?.runs ?? 0))])).toEqual([
      ["input-unchanged", ["0/4 failed", "FAIL", "pass", "—"]],
      ["total-value", ["0/4 failed", "pass", "FAIL", "—"]],
    ]);
    expect(merged.falseRejections).toEqual([{ submission: "reference.patch", runs: 4, rejected: 0, byCheck: {} }]);
  });

  it("adds correct-only runs to the correct columns, keeps the flawed ones of the full report, and counts a check one report lacks as absent", () => {
    const full = analysePower("tiny", columns(), REQS);
    const extra: Check[] = [["probe_new", "speed", "time", "failed", ["total-value"]]];
    const more = columns();
    (more[0] as PowerColumnInput).results = [run(good("passed", "passed", extra)), run(good("passed", "passed"))];
    const correctOnly = analysePower("tiny", more, REQS, "correct-only");
    const merged = mergePowerReports([correctOnly, full]);
    expect(merged.scope).toBe("all");
    expect(merged.columns.map((c) => [c.submission, c.runs])).toEqual([["reference.patch", 4], ["mutates.patch", 1], ["wrong.patch", 1], ["fails-official.patch", 1]]);
    const speed = merged.rows.find((r) => r.check === "speed");
    expect(speed?.cells[0]).toEqual({ passed: 0, failed: 1, error: 0, skipped: 0, absent: 3 });
    expect(merged.findings.map((f) => [f.kind, f.subject])).toEqual([
      ["probe-catches-nothing", "probe_new"],
      ["fails-correct", "probe_new/speed"],
      ["unexpected-verdict", "reference.patch"],
    ]);
    expect(merged.findings[2]?.message).toBe("reference.patch: 1 of 4 runs not resolved (probe-rejected 1×) — passes the official tests, fails 1 of 2 hidden probes: speed failed");
    expect(merged.falseRejections).toEqual([{ submission: "reference.patch", runs: 4, rejected: 1, byCheck: { speed: 1 } }]);
    // Correct-only reports alone merge to a correct-only report: power unknown.
    expect(mergePowerReports([correctOnly, correctOnly]).scope).toBe("correct-only");
  });

  it("refuses reports of different probe sets or tasks, and reports without their requirement list", () => {
    const a = analysePower("tiny", columns(), REQS);
    expect(() => mergePowerReports([a, { ...a, probeSet: "sha256:other" }])).toThrow(/tiny: reports of different probe sets .*the probes changed between them/);
    expect(() => mergePowerReports([a, { ...a, task: "other" }])).toThrow("reports of different tasks (tiny, other): merge one task's reports at a time");
    const old = { ...a } as Partial<typeof a>;
    delete old.requirements;
    expect(() => mergePowerReports([a, old as typeof a])).toThrow("tiny: a report has no requirements list (it predates them): run it again to merge it");
    expect(() => mergePowerReports([{ ...a, scope: "correct-only" }])).toThrow("tiny: a correct-only report has a column of the flawed example mutates.patch: it is not what validate --power --correct-only writes");
  });

  it("takes a report without a scope (written before reports had one) for a full run", () => {
    const full = analysePower("tiny", columns(), REQS);
    const old = { ...full } as Partial<typeof full>;
    delete old.scope;
    const correctOnly = analysePower("tiny", columns(), REQS, "correct-only");
    const merged = mergePowerReports([correctOnly, old as typeof full]);
    expect(merged.scope).toBe("all");
    expect(merged.columns.map((c) => c.submission)).toEqual(["reference.patch", "mutates.patch", "wrong.patch", "fails-official.patch"]);
  });
});
