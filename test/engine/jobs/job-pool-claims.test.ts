import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { JobDemand } from "../../../src/core/packing.js";
import { JobPool } from "../../../src/engine/jobs/job-pool.js";
import { RunnerClaims } from "../../../src/engine/claims/runner-claims.js";
import { fakeNvidiaSmi, tmp } from "../../helpers.js";
import { runNodeScript as run, transpiledSources } from "../../transpiled-sources.js";

const demand = (id: string, gpus: number, cores = 0): JobDemand => ({ id, gpus, cores, timing: false, exclusive: false });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Whether `p` has settled within `ms`. */
const settlesWithin = (p: Promise<unknown>, ms: number) => Promise.race([p.then(() => true, () => true), sleep(ms).then(() => false)]);

interface Held {
  process: string;
  id: string;
  gpus: number[];
  cores: number[];
  start: number;
  end: number;
  blockedBy: string[];
}

/**
 * One probegate process's pool over GPUs 0-1 and cores 0-3 (as every runner agent of a host would
 * have), running 16 jobs of 0-2 GPUs and 1-2 cores side by side, each held 20-60 ms; prints what
 * each job held and when.
 */
const RACER = `import { existsSync } from "node:fs";
import { JobPool } from "./engine/jobs/job-pool.js";
const [claimDir, smi, go, name] = process.argv.slice(2);
while (!existsSync(go)) await new Promise((r) => setTimeout(r, 1));
const pool = await JobPool.create({ gpus: [0, 1], cores: [0, 1, 2, 3], nvidiaSmi: smi, claimDir });
const held = [];
await Promise.all(Array.from({ length: 16 }, async (_, i) => {
  const lease = await pool.acquire({ id: name + i, gpus: [1, 2, 0, 1][i % 4], cores: 1 + (i % 2), timing: false, exclusive: false });
  const start = Date.now();
  await new Promise((r) => setTimeout(r, 20 + ((i * 13) % 40)));
  held.push({ process: name, id: lease.id, gpus: lease.gpus, cores: lease.cores, start, end: Date.now(), blockedBy: lease.blockedBy });
  await lease.release();
}));
process.stdout.write(JSON.stringify(held));
`;

afterEach(() => {
  vi.restoreAllMocks();
});

describe("GPUs and cores claimed across the probegate processes of one runner", () => {
  it("two processes' pools over the same GPUs and cores never run jobs on one GPU or core at once", async () => {
    const js = transpiledSources(["core", "engine"]);
    writeFileSync(join(js, "racer.mjs"), RACER);
    const claimDir = tmp("pg-claims-");
    const smi = fakeNvidiaSmi(2);
    const go = join(tmp("pg-go-"), "go");
    const racers = ["p", "q"].map((name) => run(join(js, "racer.mjs"), [claimDir, smi.path, go, name]));
    await sleep(300);
    writeFileSync(go, "");
    const [p, q] = (await Promise.all(racers)).map((o) => JSON.parse(o) as Held[]);
    expect(p).toHaveLength(16);
    expect(q).toHaveLength(16);
    const clashes: string[] = [];
    for (const a of p ?? []) {
      for (const b of q ?? []) {
        const shared = [...a.gpus.filter((g) => b.gpus.includes(g)).map((g) => `GPU ${g}`), ...a.cores.filter((c) => b.cores.includes(c)).map((c) => `core ${c}`)];
        if (shared.length && a.start < b.end && b.start < a.end) clashes.push(`${a.id} and ${b.id} both held ${shared.join(", ")}`);
      }
    }
    expect(clashes).toEqual([]);
    // They did contend: some job waited for what the other process held, and says whose it was.
    const blocked = [...(p ?? []), ...(q ?? [])].flatMap((h) => h.blockedBy);
    expect(blocked.length).toBeGreaterThan(0);
    expect(blocked.every((b) => /^(GPU|core) \d+: (left to )?pid \d+$/.test(b))).toBe(true);
    // Everything was given back.
    expect(readdirSync(claimDir)).toEqual([]);
  });

  it("does not hand out what another process holds, and starts a job blocked by it once it is given back", async () => {
    const dir = tmp("pg-claims-");
    const other = new RunnerClaims(dir, { pid: process.ppid }); // another live probegate process
    expect(other.claimAll(["gpu-0", "core-0"])).toBeNull();
    const pool = await JobPool.create({ gpus: [0, 1], cores: [0, 1, 2, 3], nvidiaSmi: fakeNvidiaSmi(2).path, claimDir: dir });
    const first = await pool.acquire(demand("first", 1, 2));
    expect([first.gpus, first.cores]).toEqual([[1], [1, 2]]);
    expect(first.blockedBy).toEqual([]);

    const looks = vi.spyOn(RunnerClaims.prototype, "holders");
    const second = pool.acquire(demand("second", 1, 1));
    expect(await settlesWithin(second, 1000)).toBe(false);
    // It looked again on a timer while blocked (about every 300 ms), not in a busy loop.
    expect(looks.mock.calls.length).toBeGreaterThanOrEqual(2);
    expect(looks.mock.calls.length).toBeLessThanOrEqual(6);

    other.release("gpu-0");
    expect(await settlesWithin(second, 1000)).toBe(true);
    const lease = await second;
    expect(lease.gpus).toEqual([0]);
    expect(lease.cores).toEqual([3]); // core 0 is still the other process's
    expect(lease.blockedBy).toEqual([`GPU 0: pid ${process.ppid}`]);
    expect(JobPool.waitNote(lease)).toBe(`, behind another probegate process (GPU 0: pid ${process.ppid})`);
    expect(readFileSync(join(dir, "gpu-0.claim"), "utf8")).toBe(String(process.pid));

    // Nothing blocked: no more looks.
    const before = looks.mock.calls.length;
    await sleep(700);
    expect(looks.mock.calls.length).toBe(before);
    await Promise.all([first.release(), lease.release()]);
    other.release("core-0");
    expect(readdirSync(dir)).toEqual([]);
  });

  it("leaves another pool its turn: a 4-core job is not starved by a pool that keeps handing its freed cores to its own 2-core jobs", async () => {
    const dir = tmp("pg-claims-");
    const cores = [0, 1, 2, 3];
    const smi = fakeNvidiaSmi(0).path;
    const busy = await JobPool.create({ gpus: [], cores, nvidiaSmi: smi, claimDir: dir });
    const big = await JobPool.create({ gpus: [], cores, nvidiaSmi: smi, claimDir: dir });
    // Three workers of one pool, each queueing its next 2-core job as its last one ends: two always
    // run and one always waits, so the pool never frees all four cores at once on its own.
    let stop = false;
    const starts: number[] = [];
    const waitedFor: string[] = [];
    const worker = async (w: number) => {
      for (let i = 0; !stop && i < 200; i += 1) {
        const lease = await busy.acquire(demand(`w${w}-${i}`, 0, 2));
        starts.push(Date.now());
        waitedFor.push(...lease.blockedBy);
        await sleep(30);
        await lease.release();
      }
    };
    const workers = [0, 1, 2].map(worker);
    await sleep(150);
    const asked = Date.now();
    const bigJob = big.acquire(demand("four-cores", 0, 4));
    const started = await settlesWithin(bigJob, 3000);
    stop = true;
    expect(started).toBe(true);
    const lease = await bigJob;
    const at = Date.now();
    expect(lease.cores).toEqual(cores);
    // It waited for the busy pool's older jobs and two running ones to end, not for the workers to stop.
    expect(at - asked).toBeLessThan(1500);
    expect(starts.filter((t) => t > asked && t < at).length).toBeLessThanOrEqual(4);
    expect(lease.blockedBy.length).toBeGreaterThan(0);
    expect(lease.blockedBy.every((b) => new RegExp(`^core \\d: pid ${process.pid}$`).test(b))).toBe(true);
    await sleep(100);
    await lease.release();
    await Promise.all(workers);
    // The busy pool's jobs that waited meanwhile say whose turn they left the cores to.
    expect(waitedFor.some((b) => b.endsWith(`: left to pid ${process.pid}`))).toBe(true);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("claims a job's GPUs and cores all or nothing: one taken since the look leaves none of them held", async () => {
    const dir = tmp("pg-claims-");
    const other = new RunnerClaims(dir, { pid: process.ppid });
    const pool = await JobPool.create({ gpus: [0, 1], cores: [], nvidiaSmi: fakeNvidiaSmi(2).path, claimDir: dir });
    // The other process claims GPU 1 right after this pool looked at the claims.
    vi.spyOn(RunnerClaims.prototype, "holders").mockImplementationOnce(() => {
      other.claim("gpu-1");
      return new Map();
    });
    const big = pool.acquire(demand("big", 2));
    const small = pool.acquire(demand("small", 1));
    // The two-GPU job, tried first, got GPU 0 and was refused GPU 1: it gave GPU 0 back, which the
    // one-GPU job then got.
    const s = await small;
    expect(s.gpus).toEqual([0]);
    expect(await settlesWithin(big, 500)).toBe(false);
    await s.release();
    expect(existsSync(join(dir, "gpu-0.claim"))).toBe(false);
    expect(await settlesWithin(big, 500)).toBe(false);
    other.release("gpu-1");
    const b = await big;
    expect(b.gpus).toEqual([0, 1]);
    expect(b.blockedBy).toEqual([`GPU 1: pid ${process.ppid}`]);
    await b.release();
  });

  it("takes over the GPU claim of a process that is gone", async () => {
    const dir = tmp("pg-claims-");
    const dead = spawnSync("true").pid as number;
    writeFileSync(join(dir, "gpu-0.claim"), String(dead));
    writeFileSync(join(dir, "core-0.claim"), String(dead));
    const pool = await JobPool.create({ gpus: [0], cores: [0], nvidiaSmi: fakeNvidiaSmi(1).path, claimDir: dir });
    const lease = await pool.acquire(demand("j", 1, 1));
    expect([lease.gpus, lease.cores, lease.blockedBy]).toEqual([[0], [0], []]);
    expect(readFileSync(join(dir, "gpu-0.claim"), "utf8")).toBe(String(process.pid));
    await lease.release();
    expect(readdirSync(dir)).toEqual([]);
  });

  it("gives a GPU's claim back only once its memory is back at the baseline", async () => {
    const dir = tmp("pg-claims-");
    const smi = fakeNvidiaSmi(1);
    smi.setUsed(0, 500);
    const pool = await JobPool.create({ gpus: [0], cores: [], nvidiaSmi: smi.path, claimDir: dir, reuseTimeoutMs: 5000 });
    const lease = await pool.acquire(demand("j", 1));
    smi.setUsed(0, 900);
    const released = lease.release();
    await sleep(400);
    expect(existsSync(join(dir, "gpu-0.claim"))).toBe(true);
    smi.setUsed(0, 510);
    await released;
    expect(existsSync(join(dir, "gpu-0.claim"))).toBe(false);
  });

  it("reads a GPU's idle baseline while holding its claim, not while another process's job is on it", async () => {
    const dir = tmp("pg-claims-");
    const smi = fakeNvidiaSmi(1);
    const other = new RunnerClaims(dir, { pid: process.ppid });
    other.claim("gpu-0");
    smi.setUsed(0, 4000); // the other process's job is on GPU 0 as this pool is made
    const pool = await JobPool.create({ gpus: [0], cores: [], nvidiaSmi: smi.path, claimDir: dir, reuseTimeoutMs: 300 });
    const mine = pool.acquire(demand("mine", 1));
    await sleep(100);
    smi.setUsed(0, 500); // its job ended, the GPU is back at idle, and it gave its claim back
    other.release("gpu-0");
    const lease = await mine;
    smi.setUsed(0, 3500); // this job's memory does not come back
    await lease.release();
    // Against a baseline of 4000 MiB (read when the pool was made) 3500 would look idle.
    expect(pool.notes).toEqual(["GPU 0 withdrawn: it still held 2.9 GiB above its idle baseline after its job ended"]);
  });
});
