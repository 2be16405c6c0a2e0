import { describe, expect, it } from "vitest";
import { decideVerdict } from "../../src/core/verdict.js";

const p = (...statuses: Array<"passed" | "failed" | "error" | "skipped">) => statuses.map((status) => ({ status }));

describe("decideVerdict", () => {
  it.each([
    ["harness fault outranks everything", { harnessError: "no python", official: { passed: true }, probes: p("failed") }, "error"],
    ["official tests not run", { official: null, probes: [] }, "error"],
    ["official failure outranks probes", { official: { passed: false }, probes: p("failed", "passed") }, "official-failed"],
    ["one failed probe rejects", { official: { passed: true }, probes: p("passed", "failed", "error") }, "probe-rejected"],
    ["a probe error without failures is unjudged", { official: { passed: true }, probes: p("passed", "error") }, "error"],
    ["no probe result is not a pass", { official: { passed: true }, probes: [] }, "error"],
    ["only skipped is not a pass", { official: { passed: true }, probes: p("skipped") }, "error"],
    ["all passed resolves", { official: { passed: true }, probes: p("passed", "passed", "skipped") }, "resolved"],
  ] as const)("%s", (_name, input, verdict) => {
    expect(decideVerdict(input).verdict).toBe(verdict);
  });

  it("says how many probes failed", () => {
    expect(decideVerdict({ official: { passed: true }, probes: p("failed", "failed", "passed") }).reason).toBe(
      "passes the official tests, fails 2 of 3 hidden probes",
    );
  });
});
