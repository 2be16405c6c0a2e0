import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { describe, expect, it, vi } from "vitest";
import { JobPool } from "../../../src/engine/jobs/job-pool.js";
import { claimEvaluationUid, RunnerClaims, UID_SLOTS } from "../../../src/engine/claims/runner-claims.js";
import { tmp } from "../../helpers.js";

const demand = (id: string) => ({ id, gpus: 0, cores: 0, timing: false, exclusive: false });

describe("rendezvous ports claimed across probegate processes on one runner", () => {
  it("two pools (as two processes would have) never hand out the same port while both hold theirs", async () => {
    const dir = tmp("pg-claims-");
    const range = { from: 29700, to: 29709 };
    const a = await JobPool.create({ gpus: [], cores: [0, 1, 2, 3], portRange: range, claimDir: dir });
    const b = await JobPool.create({ gpus: [], cores: [0, 1, 2, 3], portRange: range, claimDir: dir });
    const leases = await Promise.all([0, 1, 2].flatMap((i) => [a.acquire(demand(`a${i}`)), b.acquire(demand(`b${i}`))]));
    const ports = leases.map((l) => l.port);
    expect(new Set(ports).size).toBe(6);
    // Released ports can be claimed again, by either pool.
    await Promise.all(leases.map((l) => l.release()));
    const again = await Promise.all(Array.from({ length: 10 }, (_, i) => b.acquire(demand(`c${i}`))));
    expect(new Set(again.map((l) => l.port)).size).toBe(10);
    await Promise.all(again.map((l) => l.release()));
  });

  it("a claim held by a live process is respected; one whose process is gone is taken over", () => {
    const dir = tmp("pg-claims-");
    const claims = new RunnerClaims(dir);
    const dead = spawnSync("true").pid as number; // exited: its pid is no longer running
    writeFileSync(join(dir, "port-29801.claim"), String(dead));
    writeFileSync(join(dir, "port-29802.claim"), String(process.ppid)); // a live process that is not us
    expect(claims.claim("port-29801")).toBe(true);
    expect(claims.claim("port-29802")).toBe(false);
    expect(claims.claim("port-29801")).toBe(false); // ours now: not handed out twice
    claims.release("port-29801");
    expect(claims.claim("port-29801")).toBe(true);
  });

  it("a pool whose whole range is claimed elsewhere says so instead of reusing a port", async () => {
    const dir = tmp("pg-claims-");
    const other = new RunnerClaims(dir);
    writeFileSync(join(dir, "port-29900.claim"), String(process.ppid));
    writeFileSync(join(dir, "port-29901.claim"), String(process.ppid));
    const pool = await JobPool.create({ gpus: [], cores: [0], portRange: { from: 29900, to: 29901 }, claimDir: dir });
    await expect(pool.acquire(demand("x"))).rejects.toThrow(/no free rendezvous port in 29900-29901/);
    expect(other.claim("port-29900")).toBe(false);
  });

  it("gives each evaluation a sandbox uid slot no other running evaluation holds, and takes it back", () => {
    const claims = new RunnerClaims(tmp("pg-claims-"));
    const held = Array.from({ length: 50 }, () => claimEvaluationUid(claims));
    expect(new Set(held.map((h) => h.slot)).size).toBe(50);
    expect(held.every((h) => h.slot >= 0 && h.slot < UID_SLOTS)).toBe(true);
    const [first] = held;
    first?.release();
    expect(claims.claim(`uid-${first?.slot}`)).toBe(true);
    for (const h of held.slice(1)) h.release();
  });
});

describe("taking over a claim whose process is gone", () => {
  const DEAD = 999_999_001;
  const DEAD_TOO = 999_999_002;
  const [A, B, C] = [999_999_011, 999_999_012, 999_999_013];

  /**
   * Liveness as the claimants see it: DEAD and DEAD_TOO are gone, every other pid is alive. `steps`
   * maps the n-th liveness check (counting those of claimants run inside one) to another claimant,
   * which runs right there, as another process would between two steps of this one.
   */
  function interleave(steps: Record<number, () => void>) {
    let calls = 0;
    return vi.spyOn(process, "kill").mockImplementation(((pid: number) => {
      steps[++calls]?.();
      if (pid === DEAD || pid === DEAD_TOO) throw Object.assign(new Error("kill ESRCH"), { code: "ESRCH" });
      return true;
    }) as typeof process.kill);
  }

  it.each([
    { name: "the other takes it over between this one's reading the stale claim and removing it", files: {}, at: { 1: "a" } },
    { name: "a third comes in between the second's steps", files: {}, at: { 1: "a", 2: "c" } },
    { name: "the other runs while this one is taking over a takeover lock left by a dead process", files: { [`gpu-0.claim.takeover-${DEAD}`]: DEAD_TOO }, at: { 2: "a" } },
  ])("processes that all saw the stale claim never both hold the key: $name", ({ files, at }) => {
    const dir = tmp("pg-claims-");
    writeFileSync(join(dir, "gpu-0.claim"), String(DEAD));
    for (const [name, pid] of Object.entries(files)) writeFileSync(join(dir, name), String(pid));
    const claimants = { a: new RunnerClaims(dir, { pid: A }), b: new RunnerClaims(dir, { pid: B }), c: new RunnerClaims(dir, { pid: C }) };
    const got: Record<string, boolean> = {};
    const spy = interleave(Object.fromEntries(Object.entries(at).map(([n, who]) => [n, () => (got[who] = claimants[who as "a" | "c"].claim("gpu-0"))])));
    try {
      got.b = claimants.b.claim("gpu-0");
    } finally {
      spy.mockRestore();
    }
    // Every claimant scripted in did run, and exactly one of them holds the key.
    expect(Object.keys(got).sort()).toEqual(["b", ...Object.values(at)].sort());
    const holders = Object.keys(got).filter((who) => got[who]);
    expect(holders).toHaveLength(1);
    expect(readFileSync(join(dir, "gpu-0.claim"), "utf8")).toBe(String(claimants[holders[0] as "a" | "b" | "c"].pid));
    // Nothing but the one claim is left behind (no takeover lock, no file written aside).
    expect(readdirSync(dir)).toEqual(["gpu-0.claim"]);
  });

  it("a takeover lock left by a process that died holding it is taken over too", () => {
    const dir = tmp("pg-claims-");
    const dead = spawnSync("true").pid as number;
    const deadToo = spawnSync("true").pid as number;
    writeFileSync(join(dir, "core-3.claim"), String(dead));
    writeFileSync(join(dir, `core-3.claim.takeover-${dead}`), String(deadToo));
    const claims = new RunnerClaims(dir);
    expect(claims.claim("core-3")).toBe(true);
    expect(readFileSync(join(dir, "core-3.claim"), "utf8")).toBe(String(process.pid));
    expect(readdirSync(dir)).toEqual(["core-3.claim"]);
  });

  it("a claim file naming no pid is a dead claim; one held by a live process is left alone", () => {
    const dir = tmp("pg-claims-");
    writeFileSync(join(dir, "gpu-1.claim"), "");
    writeFileSync(join(dir, "gpu-2.claim"), String(process.ppid));
    const claims = new RunnerClaims(dir);
    expect(claims.holders(["gpu-1", "gpu-2", "gpu-3"])).toEqual(new Map([["gpu-2", process.ppid]]));
    expect(claims.claim("gpu-1")).toBe(true);
    expect(claims.claimAll(["gpu-3", "gpu-2"])).toEqual({ key: "gpu-2", pid: process.ppid });
    // All or nothing: gpu-3, got before gpu-2 was refused, was given back.
    expect(readdirSync(dir).sort()).toEqual(["gpu-1.claim", "gpu-2.claim"]);
  });
});
