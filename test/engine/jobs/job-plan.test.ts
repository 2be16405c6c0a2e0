import { describe, expect, it } from "vitest";
import { InputError } from "../../../src/engine/errors.js";
import { jobContextFor, planJobs } from "../../../src/engine/jobs/job-plan.js";
import { loadTask } from "../../../src/engine/task-load.js";
import { ROOT } from "../../helpers.js";
import { join } from "node:path";

const task = loadTask(join(ROOT, "tasks", "sharded-optimizer"));
const files = ["probe_api.py", "probe_memory.py", "probe_time.py"];
const withJobs = (jobs: Record<string, { gpus?: number; timing?: boolean; cores?: number; exclusive: boolean }>) => ({ ...task, spec: { ...task.spec, probes: { ...task.spec.probes, jobs } } });

describe("planning an evaluation's jobs on a runner", () => {
  it("on a CPU runner: gloo, one core per rank, the time probe marked timing", () => {
    const { official, probes } = planJobs(task, files, { gpus: 0, cores: 16 }, { tag: "t" });
    expect(official.demand).toEqual({ id: "t/official", gpus: 0, cores: 2, timing: false, exclusive: false });
    expect(probes.map((p) => [p.name, p.backend, p.demand.cores, p.demand.timing])).toEqual([
      ["probe_api", "gloo", 2, false],
      ["probe_memory", "gloo", 2, false],
      ["probe_time", "gloo", 2, true],
    ]);
  });

  it("on 8 GPUs and 64 cores: NCCL on 2 GPUs each, pinned to their share of the cores", () => {
    const { probes } = planJobs(task, files, { gpus: 8, cores: 64 }, { tag: "t" });
    expect(probes[2]?.demand).toEqual({ id: "t/probe_time", gpus: 2, cores: 16, timing: true, exclusive: false });
    expect(probes[2]?.backend).toBe("nccl");
  });

  it("on one GPU: gloo with the GPU, as before packing", () => {
    const { official } = planJobs(task, files, { gpus: 1, cores: 16 }, { tag: "t" });
    expect(official).toMatchObject({ backend: "gloo", ranks: 2, demand: { gpus: 1, cores: 16 } });
  });

  it("runs a timing job alone where cores cannot be pinned (fewer cores than GPUs)", () => {
    const { probes } = planJobs(task, files, { gpus: 8, cores: 2 }, { tag: "t" });
    expect(probes.map((p) => [p.name, p.demand.cores, p.demand.exclusive])).toEqual([
      ["probe_api", 0, false],
      ["probe_memory", 0, false],
      ["probe_time", 0, true],
    ]);
  });

  it("pins a probe that starts processes of its own to the cores it declares, at most the runner's", () => {
    // A repository gate's probe: one rank of the engine's, whose tests spawn their own ranks.
    const t = withJobs({ probe_api: { gpus: 0, timing: true, cores: 4, exclusive: false } });
    expect(planJobs(t, files, { gpus: 0, cores: 16 }, { tag: "t" }).probes[0]?.demand).toEqual({ id: "t/probe_api", gpus: 0, cores: 4, timing: true, exclusive: false });
    expect(planJobs(t, files, { gpus: 0, cores: 2 }, { tag: "t" }).probes[0]?.demand.cores).toBe(2);
    // On a GPU runner the GPUs' share of the cores decides, as for every GPU job.
    expect(planJobs(withJobs({ probe_api: { gpus: 2, cores: 1, exclusive: false } }), files, { gpus: 8, cores: 64 }, { tag: "t" }).probes[0]?.demand.cores).toBe(16);
  });

  it("takes the task's per-probe declarations", () => {
    const t = withJobs({ probe_api: { gpus: 0, exclusive: false }, probe_memory: { gpus: 4, exclusive: true }, probe_time: { timing: false, exclusive: false } });
    const { probes } = planJobs(t, files, { gpus: 8, cores: 64 }, { tag: "t" });
    expect(probes.map((p) => [p.name, p.ranks, p.backend, p.demand.gpus, p.demand.timing, p.demand.exclusive])).toEqual([
      ["probe_api", 1, "gloo", 0, false, false],
      ["probe_memory", 4, "nccl", 4, false, true],
      ["probe_time", 2, "nccl", 2, false, false],
    ]);
  });

  it("refuses, naming task.yml, a job that needs more GPUs than the runner has or a probe that does not exist", () => {
    expect(() => planJobs(withJobs({ probe_time: { gpus: 4, exclusive: false } }), files, { gpus: 2, cores: 16 }, { tag: "t" })).toThrow(/probe_time needs 4 GPUs, the runner has 2.*task\.yml/);
    expect(() => planJobs(withJobs({ probe_tme: { exclusive: false } }), files, { gpus: 0, cores: 2 }, { tag: "t" })).toThrow(InputError);
    expect(() => planJobs(withJobs({ probe_tme: { exclusive: false } }), files, { gpus: 0, cores: 2 }, { tag: "t" })).toThrow(/probes\.jobs: 'probe_tme' is not a probe file/);
  });

  it("gives the job its own port and threads for the cores it holds", () => {
    const { probes } = planJobs(task, files, { gpus: 0, cores: 16 }, { tag: "t" });
    const ctx = jobContextFor({ workspace: "/w", root: "/r", setupDir: null, totalCores: 16, isolation: () => ({ sandbox: null, cgroups: null, processes: 1, diskBytes: 1 }) }, probes[0]!, { gpus: [], cores: [4, 5, 6, 7], port: 29601 });
    expect(ctx).toMatchObject({ port: 29601, cpus: [4, 5, 6, 7], threadsPerRank: 2, worldSize: 2, cudaVisibleDevices: "" });
  });
});
