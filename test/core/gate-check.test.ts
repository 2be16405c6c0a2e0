import { describe, expect, it } from "vitest";
import { decideGate, type GateEvaluation } from "../../src/core/gate-check.js";

const ev = (task: string, state: GateEvaluation["state"], verdict: GateEvaluation["verdict"] = null, error: string | null = null): GateEvaluation => ({ task, state, verdict, error });

describe("decideGate", () => {
  it("waits while any evaluation of the head is pending", () => {
    const d = decideGate([ev("a", "completed", "resolved"), ev("b", "running")]);
    expect(d).toMatchObject({ kind: "pending", title: "Waiting for 1 of 2 evaluations" });
    expect(decideGate([])).toMatchObject({ kind: "pending" });
  });

  it("passes only when every evaluation completed resolved", () => {
    expect(decideGate([ev("a", "completed", "resolved"), ev("b", "completed", "resolved")])).toMatchObject({
      kind: "final",
      output: { conclusion: "success", title: "All 2 evaluations resolved" },
    });
  });

  it("fails on a rejection, an official failure, an error or a time-out, naming the tasks", () => {
    for (const bad of [ev("b", "completed", "probe-rejected"), ev("b", "completed", "official-failed"), ev("b", "completed", "error"), ev("b", "error", null, "no result"), ev("b", "timed-out", null, "past | deadline")]) {
      const d = decideGate([ev("a", "completed", "resolved"), bad]);
      expect(d).toMatchObject({ kind: "final", output: { conclusion: "failure", title: "1 of 2 evaluations did not resolve: b" } });
    }
    const d = decideGate([ev("b", "timed-out", null, "past | deadline")]);
    expect(d.kind === "final" && d.output.summary).toContain("| `probegate / b` | timed-out: past \\| deadline |");
  });

  it("is cancelled when the head's evaluations were superseded or the PR closed", () => {
    expect(decideGate([ev("a", "completed", "resolved"), ev("b", "cancelled")])).toMatchObject({ kind: "final", output: { conclusion: "cancelled" } });
    expect(decideGate([ev("a", "superseded")])).toMatchObject({ kind: "final", output: { conclusion: "cancelled" } });
  });
});
