import { describe, expect, it } from "vitest";
import { EvaluationClock, runLimits } from "../../src/engine/evaluation-context.js";
import { loadTask } from "../../src/engine/task-load.js";
import { TINY_TASK } from "../helpers.js";

const spec = loadTask(TINY_TASK).spec;

describe("the evaluation clock", () => {
  it("moves the deadline on by the time queued with none of the evaluation's jobs running", () => {
    const clock = new EvaluationClock(() => new Date("2026-01-02T03:04:05Z"), 300);
    expect(clock.startedAt.toISOString()).toBe("2026-01-02T03:04:05.000Z");
    const before = clock.leftS();
    expect(before).toBeGreaterThan(299);
    expect(before).toBeLessThanOrEqual(300);
    clock.addQueued(40_000);
    clock.addQueued(2_500);
    // 42.5 s more, less the time between the two readings.
    expect(clock.leftS() - before).toBeGreaterThan(41.5);
    expect(clock.leftS() - before).toBeLessThanOrEqual(42.5);
  });

  it("cuts a run's timeout to what is left of the wall clock, and never below a second", () => {
    const ev = { spec, processes: 64, diskBytes: 1024, clock: new EvaluationClock(() => new Date(), 10) };
    const over = () => true;
    const plenty = runLimits(ev, 5, over);
    expect(plenty).toMatchObject({ timeoutS: 5, outputBytes: spec.limits.outputBytes, memoryBytes: spec.limits.memory, processes: 64, diskBytes: 1024 });
    expect(plenty.gpuMemoryExceeded).toBe(over);
    expect(runLimits(ev, 60, over).timeoutS).toBeLessThanOrEqual(10);
    expect(runLimits(ev, 60, over).timeoutS).toBeGreaterThan(9);
    const spent = { ...ev, clock: new EvaluationClock(() => new Date(), 0) };
    expect(runLimits(spent, 60, over).timeoutS).toBe(1);
    // Queued time gives the wall clock back.
    spent.clock.addQueued(30_000);
    expect(runLimits(spent, 60, over).timeoutS).toBeGreaterThan(29);
  });
});
