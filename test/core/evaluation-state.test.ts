import { describe, expect, it } from "vitest";
import { summarizeAttempts } from "../../src/core/attempt-summary.js";
import {
  EVALUATION_EVENTS,
  EVALUATION_STATES,
  IllegalTransitionError,
  canTransition,
  isTerminal,
  timedOut,
  transition,
  type EvaluationEvent,
  type EvaluationState,
} from "../../src/core/evaluation-state.js";

const LEGAL: Array<[EvaluationState, EvaluationEvent, EvaluationState]> = [
  ["queued", "dispatch", "dispatched"],
  ["queued", "fail", "error"],
  ["queued", "supersede", "superseded"],
  ["queued", "cancel", "cancelled"],
  ["queued", "time-out", "timed-out"],
  ["dispatched", "start", "running"],
  ["dispatched", "complete", "completed"],
  ["dispatched", "fail", "error"],
  ["dispatched", "supersede", "superseded"],
  ["dispatched", "cancel", "cancelled"],
  ["dispatched", "time-out", "timed-out"],
  ["running", "complete", "completed"],
  ["running", "fail", "error"],
  ["running", "supersede", "superseded"],
  ["running", "cancel", "cancelled"],
  ["running", "time-out", "timed-out"],
  ["completed", "retry", "queued"],
  ["error", "retry", "queued"],
  ["timed-out", "retry", "queued"],
  ["cancelled", "retry", "queued"],
];

describe("evaluation state machine", () => {
  it.each(LEGAL)("%s --%s--> %s", (from, event, to) => {
    expect(transition(from, event)).toBe(to);
    expect(canTransition(from, event)).toBe(true);
  });

  it("allows nothing else", () => {
    const legal = new Set(LEGAL.map(([f, e]) => `${f}/${e}`));
    let illegal = 0;
    for (const s of EVALUATION_STATES) {
      for (const e of EVALUATION_EVENTS) {
        if (legal.has(`${s}/${e}`)) continue;
        illegal++;
        expect(() => transition(s, e)).toThrow(IllegalTransitionError);
        expect(canTransition(s, e)).toBe(false);
      }
    }
    expect(illegal).toBe(EVALUATION_STATES.length * EVALUATION_EVENTS.length - LEGAL.length);
  });

  it("says what was illegal and what is allowed", () => {
    const err = (() => {
      try {
        transition("completed", "start");
      } catch (e) {
        return e as IllegalTransitionError;
      }
      throw new Error("expected a throw");
    })();
    expect(err).toMatchObject({ from: "completed", event: "start" });
    expect(err.message).toBe("An evaluation in state 'completed' cannot take event 'start' (allowed: 'retry').");
    expect(() => transition("superseded", "retry")).toThrow("state 'superseded' cannot take event 'retry' (allowed: none)");
    expect(() => transition("queued", "complete")).toThrow(IllegalTransitionError);
    expect(() => transition("running", "dispatch")).toThrow(IllegalTransitionError);
  });

  it("knows which states end an attempt", () => {
    expect(EVALUATION_STATES.filter(isTerminal)).toEqual(["completed", "error", "superseded", "cancelled", "timed-out"]);
  });

  it("times out pending attempts past the deadline only", () => {
    const start = new Date("2026-12-02T10:00:00Z");
    const at = (s: number) => new Date(start.getTime() + s * 1000);
    expect(timedOut({ state: "running", attemptStartedAt: start }, at(600), 600)).toBe(false);
    expect(timedOut({ state: "running", attemptStartedAt: start }, at(601), 600)).toBe(true);
    expect(timedOut({ state: "queued", attemptStartedAt: start }, at(601), 600)).toBe(true);
    expect(timedOut({ state: "completed", attemptStartedAt: start }, at(9999), 600)).toBe(false);
    expect(timedOut({ state: "timed-out", attemptStartedAt: start }, at(9999), 600)).toBe(false);
  });
});

describe("summarizeAttempts", () => {
  const r = (attempt: number, verdict: "resolved" | "probe-rejected" | "official-failed" | "error", minute: number, key = "k1") => ({
    evaluationKey: key,
    attempt,
    headSha: "a",
    verdict,
    finishedAt: new Date(Date.UTC(2026, 11, 2, 10, minute)),
  });

  it("keeps the first attempt and the best of N, apart", () => {
    const s = summarizeAttempts([r(3, "official-failed", 30), r(1, "probe-rejected", 10), r(2, "resolved", 20, "k2")]);
    expect(s?.attempts).toBe(3);
    expect(s?.first).toMatchObject({ attempt: 1, verdict: "probe-rejected" });
    expect(s?.best).toMatchObject({ attempt: 2, evaluationKey: "k2", verdict: "resolved" });
  });

  it("ranks a judged failure over an error, and breaks ties by the earliest", () => {
    expect(summarizeAttempts([r(1, "error", 1), r(2, "official-failed", 2)])?.best.attempt).toBe(2);
    expect(summarizeAttempts([r(2, "probe-rejected", 5), r(1, "probe-rejected", 1)])?.best.attempt).toBe(1);
    expect(summarizeAttempts([])).toBeNull();
  });
});
