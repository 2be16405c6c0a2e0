import { describe, expect, it } from "vitest";
import { inVersionRange, unmetRequirements } from "../../src/core/task-environment.js";
import { TaskSpecSchema } from "../../src/core/task-spec.js";

describe("requires:", () => {
  it("compares torch versions as dotted numbers, local build tags ignored", () => {
    expect(inVersionRange("2.11.0+cu130", ">=2.1")).toBe(true);
    expect(inVersionRange("1.13.1", ">=2.1")).toBe(false);
    expect(inVersionRange("2.9.0", ">=2.1,<2.10")).toBe(true);
    expect(inVersionRange("2.10.0", ">=2.1,<2.10")).toBe(false);
    expect(inVersionRange("2.1", "==2.1.0")).toBe(true);
  });

  it("names each unmet requirement with what the runner has", () => {
    const req = { torch: ">=2.1", cuda: true, gpus: 1 };
    expect(unmetRequirements(req, { torch: "2.11.0", cuda: "13.0", gpus: 1 })).toEqual([]);
    expect(unmetRequirements(req, { torch: "1.13.1", cuda: null, gpus: 0 })).toEqual([
      "torch >=2.1 (the runner has torch 1.13.1)",
      "cuda: true (the runner's torch 1.13.1 is not a CUDA build)",
      "gpus: 1 (the runner gives the job 0 GPUs)",
    ]);
    expect(unmetRequirements(req, { torch: "2.11.0", cuda: "13.0", gpus: 0 })).toEqual([
      "cuda: true (the runner's torch is built for CUDA 13.0 but no GPU is given to the job)",
      "gpus: 1 (the runner gives the job 0 GPUs)",
    ]);
    expect(unmetRequirements({ torch: ">=2" }, { torch: null, cuda: null, gpus: 0 })).toEqual(["torch >=2 (the runner's Python has no torch)"]);
  });

  it("rejects a range that is not one, and a setup plugin that is not a module name", () => {
    const base = { id: "t", title: "t", area: "other", base: { path: "b" }, official: { command: ["x"] }, probes: { path: "p" } };
    expect(TaskSpecSchema.safeParse({ ...base, requires: { torch: "two" } }).error?.issues[0]?.path).toEqual(["requires", "torch"]);
    expect(TaskSpecSchema.safeParse({ ...base, setup: { path: "s", pytestPlugins: ["a-b"] } }).error?.issues[0]?.path).toEqual(["setup", "pytestPlugins", 0]);
    expect(TaskSpecSchema.parse({ ...base }).requires).toEqual({});
  });
});
