import { afterEach, describe, expect, it } from "vitest";
import { jobEnv, NCCL_SAFE_DEFAULTS, type JobContext } from "../../../src/engine/jobs/job-env.js";
import { tmp } from "../../helpers.js";

const ctx = (): JobContext => ({
  workspace: "/ws",
  root: tmp("pg-jobenv-"),
  backend: "nccl",
  worldSize: 2,
  cudaVisibleDevices: "0,1",
  threadsPerRank: 4,
  isolation: { sandbox: null, cgroups: null, processes: 64, diskBytes: 1 << 20 } as unknown as JobContext["isolation"],
});

describe("jobEnv", () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it("turns NVLink multicast off in every job unless the operator set it", () => {
    const env = jobEnv(ctx());
    expect(env).toMatchObject({ NCCL_NVLS_ENABLE: "0", TORCH_SYMM_MEM_DISABLE_MULTICAST: "1", NVSHMEM_DISABLE_NVLS: "1" });
    process.env.NCCL_NVLS_ENABLE = "1";
    expect(jobEnv(ctx()).NCCL_NVLS_ENABLE).toBe("1");
    expect(Object.keys(NCCL_SAFE_DEFAULTS)).toHaveLength(3);
  });

  it("passes NCCL tuning through but never a token, key or runner variable", () => {
    Object.assign(process.env, { NCCL_DEBUG: "INFO", GITHUB_TOKEN: "ghs_secret", PROBEGATE_SIGNING_KEY: "k", ACTIONS_RUNTIME_TOKEN: "t", AWS_SECRET_ACCESS_KEY: "a" });
    const env = jobEnv(ctx(), { PROBEGATE_RESULTS: "/r.jsonl" });
    expect(env.NCCL_DEBUG).toBe("INFO");
    expect(env.PROBEGATE_RESULTS).toBe("/r.jsonl");
    expect(env.CUDA_VISIBLE_DEVICES).toBe("0,1");
    for (const k of ["GITHUB_TOKEN", "PROBEGATE_SIGNING_KEY", "ACTIONS_RUNTIME_TOKEN", "AWS_SECRET_ACCESS_KEY"]) expect(env).not.toHaveProperty(k);
    expect(Object.values(env).join("\n")).not.toMatch(/ghs_secret/);
  });
});
