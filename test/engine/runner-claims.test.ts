import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { JobPool } from "../../src/engine/job-pool.js";
import { claimEvaluationUid, RunnerClaims, UID_SLOTS } from "../../src/engine/runner-claims.js";
import { tmp } from "../helpers.js";

const demand = (id: string) => ({ id, gpus: 0, cores: 0, timing: false, exclusive: false });

describe("rendezvous ports claimed across probegate processes on one runner", () => {
  it("two pools (as two processes would have) never hand out the same port while both hold theirs", async () => {
    const dir = tmp("pg-claims-");
    const range = { from: 29700, to: 29709 };
    const a = await JobPool.create({ gpus: [], cores: [0, 1, 2, 3], portRange: range, portClaimDir: dir });
    const b = await JobPool.create({ gpus: [], cores: [0, 1, 2, 3], portRange: range, portClaimDir: dir });
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
    const pool = await JobPool.create({ gpus: [], cores: [0], portRange: { from: 29900, to: 29901 }, portClaimDir: dir });
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
