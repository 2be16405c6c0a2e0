import { cpSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { evaluate } from "../../../src/engine/evaluate.js";
import { InputError } from "../../../src/engine/errors.js";
import { JobPool, type JobLease } from "../../../src/engine/jobs/job-pool.js";
import { loadTask } from "../../../src/engine/task-load.js";
import type { JobDemand } from "../../../src/core/packing.js";
import { fakeNvidiaSmi, KIT, TINY_SUBS, TINY_TASK, tmp } from "../../helpers.js";

const demand = (id: string, gpus: number, o: Partial<JobDemand> = {}): JobDemand => ({ id, gpus, cores: 0, timing: false, exclusive: false, ...o });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("the job pool: GPUs, cores and ports shared by packed jobs", () => {
  it("never gives two running jobs the same GPU, core or port; a timing job shares nothing", async () => {
    const smi = fakeNvidiaSmi(4);
    const pool = await JobPool.create({ gpus: [0, 1, 2, 3], cores: [0, 1, 2, 3, 4, 5, 6, 7], nvidiaSmi: smi.path });
    const held = new Map<string, JobLease & { timing: boolean }>();
    const violations: string[] = [];
    let peak = 0;
    // 40 jobs of 1, 2 or 4 GPUs, some timing, some with pinned cores, held 10-60 ms each.
    const jobs = Array.from({ length: 40 }, (_, i) => demand(`j${i}`, [1, 2, 4, 1, 2][i % 5] as number, { cores: i % 3, timing: i % 7 === 0 }));
    await Promise.all(
      jobs.map(async (d, i) => {
        const lease = await pool.acquire(d);
        for (const [id, other] of held) {
          if (other.gpus.some((g) => lease.gpus.includes(g))) violations.push(`${d.id} and ${id} share a GPU`);
          if (other.cores.some((c) => lease.cores.includes(c))) violations.push(`${d.id} and ${id} share a core`);
          if (other.port === lease.port) violations.push(`${d.id} and ${id} share port ${lease.port}`);
        }
        expect(lease.gpus).toHaveLength(d.gpus);
        expect(lease.cores).toHaveLength(d.cores);
        expect(lease.port).not.toBe(29500);
        held.set(d.id, { ...lease, timing: d.timing });
        peak = Math.max(peak, held.size);
        await sleep(10 + ((i * 7) % 50));
        held.delete(d.id);
        await lease.release();
      }),
    );
    expect(violations).toEqual([]);
    // It did pack: several jobs ran at once.
    expect(peak).toBeGreaterThan(1);
  });

  it("runs a job marked exclusive with nothing beside it", async () => {
    const pool = await JobPool.create({ gpus: [], cores: [0, 1, 2, 3] });
    const log: string[] = [];
    let running = 0;
    const run = async (d: JobDemand, ms: number) => {
      const lease = await pool.acquire(d);
      running += 1;
      log.push(`${d.id} starts with ${running - 1} others`);
      await sleep(ms);
      running -= 1;
      await lease.release();
    };
    await Promise.all([run(demand("a", 0, { cores: 1 }), 80), run(demand("time", 0, { cores: 1, timing: true, exclusive: true }), 40), run(demand("b", 0, { cores: 1 }), 40), run(demand("c", 0, { cores: 1 }), 40)]);
    expect(log.find((l) => l.startsWith("time"))).toBe("time starts with 0 others");
    expect(log.filter((l) => !l.startsWith("time")).some((l) => !l.endsWith("with 0 others"))).toBe(true);
  });

  it("gives a GPU to the next job only once its memory is back at the idle baseline", async () => {
    const smi = fakeNvidiaSmi(1);
    smi.setUsed(0, 500);
    const pool = await JobPool.create({ gpus: [0], cores: [0], nvidiaSmi: smi.path, reuseTimeoutMs: 5000 });
    const first = await pool.acquire(demand("first", 1));
    smi.setUsed(0, 900); // the job's process is gone but its memory is not back yet
    const t0 = Date.now();
    const second = pool.acquire(demand("second", 1));
    setTimeout(() => smi.setUsed(0, 520), 600); // back within the 64 MiB tolerance
    await first.release();
    const lease = await second;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(550);
    expect(lease.gpus).toEqual([0]);
    await lease.release();
  });

  it("withdraws a GPU whose memory never comes back, and fails what can then never run", async () => {
    const smi = fakeNvidiaSmi(1);
    // A folder of its own: the withdrawn GPU stays claimed while this process lives.
    const pool = await JobPool.create({ gpus: [0], cores: [0], nvidiaSmi: smi.path, reuseTimeoutMs: 300, claimDir: tmp("pg-claims-") });
    const first = await pool.acquire(demand("first", 1));
    smi.setUsed(0, 4096);
    const second = pool.acquire(demand("second", 1));
    await first.release();
    await expect(second).rejects.toThrow(/second needs 1 GPUs; this runner has 0 usable \(GPU 0 withdrawn/);
    expect(pool.notes).toEqual(["GPU 0 withdrawn: it still held 4.0 GiB above its idle baseline after its job ended"]);
  });

  it("refuses at once a job that needs more GPUs than the runner has", async () => {
    const pool = await JobPool.create({ gpus: [0, 1], cores: [0, 1], nvidiaSmi: fakeNvidiaSmi(2).path });
    await expect(pool.acquire(demand("probe_x", 4))).rejects.toThrow("probe_x needs 4 GPUs; this runner has 2 usable");
  });

  it("fails an evaluation whose probe needs more GPUs than the runner has, before anything runs", async () => {
    const smi = fakeNvidiaSmi(2);
    const dir = join(tmp(), "tiny-sum");
    cpSync(TINY_TASK, dir, { recursive: true });
    cpSync(join(TINY_TASK, "..", "..", "probes", "tiny-sum"), join(dir, "..", "probes"), { recursive: true });
    const yml = join(dir, "task.yml");
    const { readFileSync } = await import("node:fs");
    writeFileSync(yml, readFileSync(yml, "utf8").replace("  path: ../../probes/tiny-sum", "  path: ../probes\n  jobs:\n    probe_state: { gpus: 4 }"));
    const saved = process.env.PROBEGATE_NVIDIA_SMI;
    process.env.PROBEGATE_NVIDIA_SMI = smi.path;
    const events: string[] = [];
    try {
      const run = evaluate({ task: loadTask(dir), submission: { kind: "patch", path: join(TINY_SUBS, "reference.patch") }, kitDir: KIT, onEvent: (e) => events.push(e.type === "phase-start" ? e.phase : e.type) });
      await expect(run).rejects.toThrow(InputError);
      await expect(run).rejects.toThrow(/probe_state needs 4 GPUs, the runner has 2.*task\.yml/);
      // The workspace was built; no test or probe ran.
      expect(events).not.toContain("official");
    } finally {
      if (saved === undefined) delete process.env.PROBEGATE_NVIDIA_SMI;
      else process.env.PROBEGATE_NVIDIA_SMI = saved;
    }
  });
});

describe("the job pool's order", () => {
  it("starts the jobs queued together largest first (first-fit-decreasing), not in arrival order", async () => {
    const pool = await JobPool.create({ gpus: [0, 1, 2, 3], cores: [0], nvidiaSmi: fakeNvidiaSmi(4).path });
    const order: string[] = [];
    const run = async (d: JobDemand) => {
      const lease = await pool.acquire(d);
      order.push(d.id);
      await sleep(30);
      await lease.release();
    };
    await Promise.all([run(demand("one-a", 1)), run(demand("one-b", 1)), run(demand("four", 4)), run(demand("two", 2))]);
    expect(order[0]).toBe("four");
    expect(order.slice(1, 3).sort()).toEqual(["one-a", "two"]);
  });
});
