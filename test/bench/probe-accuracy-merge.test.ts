import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Expectation } from "../../src/core/demo-expectation.js";
import { analysePower, type PowerColumnInput, type PowerReport, type PowerScope } from "../../src/core/probe-power/probe-power.js";
import { powerMatrix } from "../../src/core/probe-power/probe-power-render.js";
import type { CheckStatus } from "../../src/core/probe-check.js";
import type { EvaluationResult } from "../../src/core/result.js";
import { ROOT, sampleResult, tmp } from "../helpers.js";

// bench/probe_accuracy.py merges the JSON reports of several `validate --power` calls (a device call
// has a time limit); these reports are made by the same analysis the CLI prints as JSON.

const PYTHON = "/usr/bin/python3";
const want = (submission: string, verdict: Expectation["verdict"], failedCategories: Expectation["failedCategories"] = []): Expectation => ({ submission, verdict, failedCategories, quick: false });

function run(value: CheckStatus, state: CheckStatus): EvaluationResult {
  const probes = [
    { id: "total-value", category: "functional" as const, status: value, message: "", probe: "probe_value", attempts: 1, durationS: 0.1, requirements: ["total-value"] },
    { id: "input-unchanged", category: "state" as const, status: state, message: "", probe: "probe_value", attempts: 1, durationS: 0.1, requirements: ["input-unchanged"] },
  ];
  return sampleResult({ verdict: probes.some((p) => p.status === "failed") ? "probe-rejected" : "resolved", probes });
}

function inputs(referenceRuns: EvaluationResult[]): PowerColumnInput[] {
  return [
    { submission: "reference.patch", expectation: want("reference.patch", "resolved"), results: referenceRuns },
    { submission: "mutates.patch", expectation: want("mutates.patch", "probe-rejected", ["state"]), results: [run("passed", "failed")] },
    { submission: "alt.patch", expectation: want("alt.patch", "resolved"), results: [run("passed", "passed")] },
    { submission: "wrong.patch", expectation: want("wrong.patch", "probe-rejected", ["functional"]), results: [run("failed", "passed")] },
  ];
}

/** A report file as bench/probe_accuracy.py keeps it: one task's element of `validate --power --format json`. */
function reportFile(dir: string, stamp: string, report: PowerReport, drop: Array<keyof PowerReport> = []): void {
  const doc: Record<string, unknown> = { ...report, staticProblems: [], quarantined: null, matrix: powerMatrix(report) };
  for (const key of drop) delete doc[key];
  writeFileSync(join(dir, `power-tiny-${stamp}.json`), JSON.stringify(doc));
}

function merged(dir: string): { code: number | null; out: string; err: string } {
  const r = spawnSync(PYTHON, [join(ROOT, "bench", "probe_accuracy.py"), "--skip-meters", "--power-merge-only", "--power-log", dir, "--tasks", "tiny"], { encoding: "utf8" });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const analyse = (runs: EvaluationResult[], scope: PowerScope) => analysePower("tiny", inputs(runs), ["total-value", "input-unchanged"], scope);

describe("bench/probe_accuracy.py: merging the reports of several calls", () => {
  // The merge itself is `probegate merge-power` (test/cli/power.test.ts, test/core/probe-power/probe-power.test.ts);
  // here: which reports the bench hands it, and what it prints of the result.
  it("merges the reports of the newest report's probe set, leaves older probe sets out and says so, and counts the correct runs covered", () => {
    const dir = tmp();
    // The correct-only call sorts first: the columns still keep the full report's order (mutates before alt).
    reportFile(dir, "20261201T000000", analyse([run("passed", "passed"), run("passed", "passed"), run("passed", "passed")], "correct-only"));
    // A report written before scopes existed has none: it was a full run.
    reportFile(dir, "20261202T000000", analyse([run("passed", "passed"), run("passed", "failed")], "all"), ["scope"]);
    // A report of probes that have changed since: its runs do not count for the probes of now.
    reportFile(dir, "20261130T000000", { ...analyse([run("passed", "passed")], "all"), probeSet: "sha256:bbbbbbbbbbbb" });
    utimesSync(join(dir, "power-tiny-20261130T000000.json"), new Date(2026, 0, 1), new Date(2026, 0, 1));
    const r = merged(dir);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toContain("#### tiny: 2 report(s) of probe set sha256:aaaaaaaaaaaa merged; 1 of older probe sets left out\n");
    expect(r.out).toContain("##### ❌ Probe power — `tiny`\n");
    expect(r.out).toContain("| probe | check | category | reference ✓ ×5 | mutates | alt ✓ ×2 | wrong |");
    expect(r.out).toContain("| probe_value | input-unchanged | state | 1/5 failed | FAIL | 0/2 failed | pass |");
    expect(r.out).toContain("- reference.patch: 1 of 5 runs not resolved (input-unchanged 1)");
    expect(r.out).toContain("covered: 2 correct submissions of 1 tasks, 2–5 runs each (fewest: tiny/alt.patch); 7 correct-submission runs in all");
  }, 60_000);

  it("with correct-only reports alone, prints the false rejections and no flawed column", () => {
    const dir = tmp();
    reportFile(dir, "20261201T000000", analyse([run("passed", "passed")], "correct-only"));
    reportFile(dir, "20261202T000000", analyse([run("passed", "passed"), run("passed", "passed")], "correct-only"));
    const r = merged(dir);
    expect(r.err).toBe("");
    expect(r.out).toContain("#### tiny: 2 report(s) of probe set sha256:aaaaaaaaaaaa merged\n");
    expect(r.out).toContain("##### ✅ Probe power — `tiny` (false rejections only)");
    expect(r.out).toContain("| probe | check | category | reference ✓ ×3 | alt ✓ ×2 |\n");
    expect(r.out).not.toMatch(/mutates|wrong/);
  }, 60_000);

  it("prints merge-power's refusal of a report that is not what validate writes, naming the file", () => {
    const dir = tmp();
    const full = analyse([run("passed", "passed")], "all");
    reportFile(dir, "20261201T000000", { ...full, scope: "correct-only" });
    const r = merged(dir);
    expect(r.out).toMatch(/merge-power failed \(exit 2\): .*tiny: a correct-only report has a column of the flawed example mutates\.patch.*power-tiny-20261201T000000\.json/);
    expect(r.out).not.toContain("covered:");
  }, 60_000);
});

describe("bench/probe_accuracy.py --power-correct-only", () => {
  /** Runs section D with a stand-in for node that records the validate command line and reports nothing. */
  function validateArgv(extra: string[]): string[] {
    const dir = tmp();
    const fake = join(dir, "node");
    writeFileSync(fake, `#!/bin/sh\nprintf '%s\\n' "$@" > ${join(dir, "argv")}\necho '[]'\n`, { mode: 0o755 });
    const r = spawnSync(PYTHON, [join(ROOT, "bench", "probe_accuracy.py"), "--skip-meters", "--power", "3", "--node", fake, "--power-log", join(dir, "log"), "--tasks", "tiny", ...extra], { encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(r.stdout).toContain("#### tiny: no report yet");
    return readFileSync(join(dir, "argv"), "utf8").trim().split("\n");
  }

  it("passes --correct-only to validate --power, and only then", () => {
    const argv = validateArgv(["--power-correct-only"]);
    expect(argv.slice(1, 3)).toEqual(["validate", "--power"]);
    expect(argv).toContain("--correct-only");
    expect(argv.slice(argv.indexOf("--runs"), argv.indexOf("--runs") + 2)).toEqual(["--runs", "3"]);
    expect(validateArgv([])).not.toContain("--correct-only");
  }, 60_000);
});

describe("bench/probe_accuracy.py --power N: a goal over all calls", () => {
  /** Section D over a log holding one correct-only report (reference 3 runs, alt 1), with a stand-in for
   * node that hands merge-power to the real node and records the validate command line. */
  function topUp(goal: number, extra: string[] = []): { out: string; argv: string[] | null } {
    const dir = tmp();
    const log = join(dir, "log");
    mkdirSync(log);
    reportFile(log, "20261201T000000", analyse([run("passed", "passed"), run("passed", "passed"), run("passed", "passed")], "correct-only"));
    const fake = join(dir, "node");
    writeFileSync(fake, `#!/bin/sh\nif [ "$2" = merge-power ]; then exec ${process.execPath} "$@"; fi\nprintf '%s\\n' "$@" > ${join(dir, "argv")}\necho '[]'\n`, { mode: 0o755 });
    const r = spawnSync(PYTHON, [join(ROOT, "bench", "probe_accuracy.py"), "--skip-meters", "--power", String(goal), "--node", fake, "--power-log", log, "--tasks", "tiny", "--jobs", "4", ...extra], { encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    return { out: r.stdout, argv: existsSync(join(dir, "argv")) ? readFileSync(join(dir, "argv"), "utf8").trim().split("\n") : null };
  }
  const runsArg = (argv: string[]) => argv.slice(argv.indexOf("--runs"), argv.indexOf("--runs") + 2);

  it("runs only what the least-run correct submission lacks of the goal, with all the jobs", () => {
    const r = topUp(5, ["--power-correct-only"]);
    expect(r.out).toContain("- tiny: --runs 4 (had 1), 4 evaluations at a time: ");
    expect(runsArg(r.argv!)).toEqual(["--runs", "4"]);
    expect(r.argv!.slice(r.argv!.indexOf("--jobs"), r.argv!.indexOf("--jobs") + 2)).toEqual(["--jobs", "4"]);
    expect(r.out).toContain("(goal 5; fewest: tiny/alt.patch)");
  }, 60_000);

  it("does not run a task whose correct submissions all have the goal already; a full call still runs its flawed examples once", () => {
    const done = topUp(1, ["--power-correct-only"]);
    expect(done.argv).toBeNull();
    expect(done.out).toMatch(/- tiny: 1 runs of each correct submission already in .*log; not run/);
    const full = topUp(1);
    expect(runsArg(full.argv!)).toEqual(["--runs", "1"]);
    expect(full.argv).not.toContain("--correct-only");
  }, 60_000);

  it("stops before evaluating anything when a kept report cannot be read, naming the file", () => {
    for (const [name, body] of [
      ["garbled", "{"],
      ["refused", JSON.stringify({ ...analyse([run("passed", "passed")], "all"), scope: "correct-only", staticProblems: [], quarantined: null })],
    ] as Array<[string, string]>) {
      const dir = tmp();
      const log = join(dir, "log");
      mkdirSync(log);
      writeFileSync(join(log, `power-tiny-${name}.json`), body);
      const fake = join(dir, "node");
      writeFileSync(fake, `#!/bin/sh\nif [ "$2" = merge-power ]; then exec ${process.execPath} "$@"; fi\nprintf '%s\\n' "$@" > ${join(dir, "argv")}\necho '[]'\n`, { mode: 0o755 });
      const r = spawnSync(PYTHON, [join(ROOT, "bench", "probe_accuracy.py"), "--skip-meters", "--power", "3", "--node", fake, "--power-log", log, "--tasks", "tiny"], { encoding: "utf8" });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`power-tiny-${name}.json`);
      expect(r.stderr).toMatch(name === "garbled" ? /is not a power report/ : /merge-power could not merge 1 report\(s\) .*exit 2.*flawed example mutates\.patch/);
      expect(existsSync(join(dir, "argv"))).toBe(false);
    }
  }, 60_000);
});
