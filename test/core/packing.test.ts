import { describe, expect, it } from "vitest";
import { ffdOrder, formatIdList, makespanLowerBound, nextPort, parseIdList, pickStarts, TORCH_DEFAULT_PORT, unfitJobs, type WaitingJob } from "../../src/core/packing.js";

const job = (id: string, gpus: number, o: Partial<WaitingJob> = {}): WaitingJob => ({ id, gpus, cores: 0, timing: false, exclusive: false, seq: 0, passedOver: 0, ...o });
const free = (gpus: number, cores = 0, slots = 99) => ({ gpus: [...Array(gpus).keys()], cores: [...Array(cores).keys()], slots });

describe("packing: which jobs start, on which GPUs and cores", () => {
  it("orders first-fit-decreasing: most GPUs, then most cores, then first come", () => {
    const order = ffdOrder([job("a", 1, { seq: 0 }), job("b", 4, { seq: 1 }), job("c", 1, { seq: 2, cores: 3 }), job("d", 4, { seq: 3 })]);
    expect(order.map((j) => j.id)).toEqual(["b", "d", "c", "a"]);
  });

  it("gives each job the lowest free GPUs and cores, never one twice", () => {
    const { starts } = pickStarts([job("a", 2, { seq: 0, cores: 4 }), job("b", 1, { seq: 1, cores: 2 }), job("c", 1, { seq: 2, cores: 2 })], free(4, 8), [], 8);
    expect(starts).toEqual([
      { id: "a", gpus: [0, 1], cores: [0, 1, 2, 3] },
      { id: "b", gpus: [2], cores: [4, 5] },
      { id: "c", gpus: [3], cores: [6, 7] },
    ]);
  });

  it("lets smaller jobs past one that does not fit, and counts it as passed over", () => {
    const r = pickStarts([job("big", 4, { seq: 0 }), job("small", 1, { seq: 1 })], free(2), [], 8);
    expect(r.starts.map((s) => s.id)).toEqual(["small"]);
    expect(r.passed).toEqual(["big"]);
  });

  it("a job passed over `patience` times holds the runner until it fits", () => {
    const r = pickStarts([job("big", 4, { seq: 0, passedOver: 3 }), job("small", 1, { seq: 1 })], free(2), [], 3);
    expect(r.starts).toEqual([]);
  });

  it("starts an exclusive job only on an idle runner, and nothing beside it", () => {
    const timing = job("time", 1, { seq: 0, timing: true, exclusive: true });
    expect(pickStarts([timing, job("x", 1, { seq: 1 })], free(4), [{ id: "r", gpus: [3], cores: [], exclusive: false }], 8).starts.map((s) => s.id)).toEqual(["x"]);
    expect(pickStarts([timing, job("x", 1, { seq: 1 })], free(4), [], 8).starts.map((s) => s.id)).toEqual(["time"]);
    expect(pickStarts([job("x", 1)], free(3), [{ id: "time", gpus: [3], cores: [], exclusive: true }], 8).starts).toEqual([]);
  });

  it("keeps to the --jobs budget", () => {
    expect(pickStarts([job("a", 0, { seq: 0, cores: 1 }), job("b", 0, { seq: 1, cores: 1 })], free(0, 4, 1), [], 8).starts.map((s) => s.id)).toEqual(["a"]);
    expect(pickStarts([job("a", 0, { cores: 1 })], free(0, 4, 0), [], 8).starts).toEqual([]);
  });

  it("names the jobs that can never run here", () => {
    expect(unfitJobs([{ id: "probe_time", gpus: 4, cores: 0, timing: true, exclusive: false }, { id: "ok", gpus: 1, cores: 2, timing: false, exclusive: false }], { gpus: 2, cores: 16 })).toEqual([
      "probe_time needs 4 GPUs, the runner has 2",
    ]);
    expect(unfitJobs([{ id: "cpu", gpus: 0, cores: 8, timing: false, exclusive: false }], { gpus: 0, cores: 2 })).toEqual(["cpu needs 8 cores, the runner has 2"]);
  });

  it("bounds the makespan below by the longest job and by the area over capacity", () => {
    expect(makespanLowerBound([{ units: 1, seconds: 10 }, { units: 1, seconds: 1 }], 4)).toBe(10);
    expect(makespanLowerBound([{ units: 2, seconds: 4 }, { units: 2, seconds: 4 }, { units: 4, seconds: 2 }], 2)).toBe(12);
    expect(makespanLowerBound([], 8)).toBe(0);
  });

  it("rotates rendezvous ports, skipping those in use and torch's default", () => {
    const range = { from: TORCH_DEFAULT_PORT - 1, to: TORCH_DEFAULT_PORT + 2 };
    expect(nextPort(new Set(), TORCH_DEFAULT_PORT - 1, range)).toBe(TORCH_DEFAULT_PORT + 1);
    expect(nextPort(new Set([TORCH_DEFAULT_PORT + 1]), TORCH_DEFAULT_PORT - 1, range)).toBe(TORCH_DEFAULT_PORT + 2);
    expect(nextPort(new Set(), TORCH_DEFAULT_PORT + 2, range)).toBe(TORCH_DEFAULT_PORT - 1);
    expect(nextPort(new Set([TORCH_DEFAULT_PORT - 1, TORCH_DEFAULT_PORT + 1, TORCH_DEFAULT_PORT + 2]), 0, range)).toBeNull();
  });

  it("writes and reads core lists the way taskset and /proc do", () => {
    expect(formatIdList([3, 0, 1, 2, 6, 8, 9])).toBe("0-3,6,8-9");
    expect(parseIdList("0-3,6,8-9")).toEqual([0, 1, 2, 3, 6, 8, 9]);
    expect(parseIdList("3-1")).toBeNull();
    expect(parseIdList("a")).toBeNull();
  });
});
