import { describe, expect, it } from "vitest";
import { renderCheckRunWithQuarantine } from "../../src/core/quarantine-check-run.js";
import { quarantinedChecks, readWithQuarantine } from "../../src/core/quarantine.js";
import { renderCheckRun } from "../../src/core/check-run-render.js";
import type { CheckStatus } from "../../src/core/probe-check.js";
import { sampleResult } from "../helpers.js";

/** `of` outcomes, newest first, the newest `failures` of them failed. */
const statuses = (failures: number, of: number): CheckStatus[] => Array.from({ length: of }, (_, i) => (i < failures ? "failed" : "passed"));

describe("quarantinedChecks", () => {
  it("quarantines a check that failed known-good submissions more than once in its last 20 outcomes", () => {
    expect(quarantinedChecks([{ check: "once", statuses: statuses(1, 20) }, { check: "twice", statuses: statuses(2, 20) }])).toEqual([{ check: "twice", failures: 2, window: 20 }]);
  });

  it("counts errors as failures and looks only at the latest 20", () => {
    expect(quarantinedChecks([{ check: "errs", statuses: ["error", "passed", "failed"] }])).toEqual([{ check: "errs", failures: 2, window: 3 }]);
    // Two old failures, then 20 passes: out of the window, trusted again.
    expect(quarantinedChecks([{ check: "old", statuses: [...statuses(0, 20), "failed", "failed"] }])).toEqual([]);
    expect(quarantinedChecks([{ check: "skips", statuses: ["skipped", "skipped", "passed"] }])).toEqual([]);
  });
});

describe("readWithQuarantine", () => {
  const rejected = sampleResult(); // state-sharded (memory) failed, interfaces passed
  const q = [{ check: "state-sharded", failures: 3, window: 20 }];

  it("sets a quarantined check's failure aside: the other checks decide, and the result is not changed", () => {
    const before = JSON.stringify(rejected);
    const r = readWithQuarantine(rejected, q);
    expect(r).toMatchObject({ verdict: "resolved", changed: true, reason: "passes the official tests and all 1 hidden probes; 1 failure of quarantined checks set aside as warnings" });
    expect(r.warnings.map((w) => w.probe.id)).toEqual(["state-sharded"]);
    expect(JSON.stringify(rejected)).toBe(before);
  });

  it("still rejects on a failure of a check that is not quarantined", () => {
    const two = sampleResult({ probes: [...rejected.probes, { ...(rejected.probes[1] as (typeof rejected.probes)[number]), id: "other", status: "failed" }] });
    expect(readWithQuarantine(two, q)).toMatchObject({ verdict: "probe-rejected", changed: false });
    expect(readWithQuarantine(rejected, [{ check: "interfaces", failures: 2, window: 20 }])).toMatchObject({ verdict: "probe-rejected", changed: false, warnings: [] });
  });

  it("leaves official failures and harness errors alone", () => {
    const official = sampleResult({ verdict: "official-failed", official: { ...(rejected.official as NonNullable<typeof rejected.official>), passed: false } });
    expect(readWithQuarantine(official, q)).toMatchObject({ verdict: "official-failed", changed: false, warnings: [] });
  });
});

describe("renderCheckRunWithQuarantine", () => {
  it("concludes success, turns the failure annotation into a warning, and says in the summary what was quarantined and why", () => {
    const { output, verdict } = renderCheckRunWithQuarantine(sampleResult(), [{ check: "state-sharded", failures: 3, window: 20 }]);
    expect(verdict).toBe("resolved");
    expect(output.conclusion).toBe("success");
    expect(output.title).toBe("Passes official tests and hidden probes (1 quarantined check failed)");
    expect(output.annotations).toEqual([expect.objectContaining({ path: "dpopt/optim.py", start_line: 42, annotation_level: "warning", title: "quarantined memory probe failed: state-sharded" })]);
    expect(output.annotations[0]?.message).toMatch(/failed 3 of its last 20 outcomes on known-good submissions/);
    expect(output.summary).toContain("| `state-sharded` | memory | failed | 3 of last 20 |");
    expect(output.summary).toContain("probegate reads this result as **resolved**; the signed result says probe-rejected.");
  });

  it("is the plain check run when nothing quarantined failed", () => {
    expect(renderCheckRunWithQuarantine(sampleResult(), [{ check: "interfaces", failures: 2, window: 20 }])).toEqual({ output: renderCheckRun(sampleResult()), verdict: "probe-rejected" });
  });
});
