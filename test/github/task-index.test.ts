import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { probeJobGpus } from "../../src/github/task-index.js";

describe("probeJobGpus: what a task's probe jobs ask of a runner", () => {
  it("reads probes.jobs.<name>.gpus (megatron-ddp-gate: 1 GPU for the tests, 2 for its differential probe)", () => {
    const spec = parse(readFileSync("tasks/megatron-ddp-gate/task.yml", "utf8")) as { gpus: number; probes: unknown };
    expect(spec.gpus).toBe(1);
    expect(Math.max(spec.gpus, ...probeJobGpus(spec.probes))).toBe(2);
  });

  it("is empty without jobs, and ignores jobs that name no GPU count", () => {
    expect(probeJobGpus({ path: "probes", pattern: "probe_*.py" })).toEqual([]);
    expect(probeJobGpus(undefined)).toEqual([]);
    expect(probeJobGpus({ jobs: { a: { timing: true }, b: { gpus: 4 } } })).toEqual([0, 4]);
  });
});
