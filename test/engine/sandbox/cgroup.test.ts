import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { createJobCgroup, findControllers, keyedCount, ownCgroupPath } from "../../../src/engine/sandbox/cgroup.js";
import { tmp } from "../../helpers.js";

const V1_SELF = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/abc\n0::/\n";
const V2_SELF = "0::/job.slice/runner\n";

describe("cgroup paths and files", () => {
  it("reads this process's cgroup per controller", () => {
    expect(ownCgroupPath(V1_SELF, "memory")).toBe("/process_api/abc");
    expect(ownCgroupPath(V1_SELF, "pids")).toBe("/");
    expect(ownCgroupPath(V2_SELF, null)).toBe("/job.slice/runner");
    expect(ownCgroupPath(V2_SELF, "memory")).toBeNull();
  });

  it("reads counts from flat keyed files", () => {
    expect(keyedCount("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", "oom_kill")).toBe(3);
    expect(keyedCount("max 0\n", "max")).toBe(0);
    expect(keyedCount("low 0\nhigh 2\n", "oom_kill")).toBe(0);
  });

  it("finds v1 hierarchies under this process's own groups", () => {
    const root = tmp("pg-cg1-");
    for (const c of ["memory/process_api/abc", "pids"]) mkdirSync(join(root, c), { recursive: true });
    writeFileSync(join(root, "memory", "cgroup.procs"), "");
    writeFileSync(join(root, "pids", "cgroup.procs"), "");
    expect(findControllers(root, V1_SELF)).toEqual({ version: 1, memory: join(root, "memory", "/process_api/abc"), pids: join(root, "pids", "/") });
    expect(findControllers(tmp("pg-cg-none-"), V1_SELF)).toBeNull();
  });

  it("uses v2 only where memory and pids are delegated to children, and sets limits there", () => {
    const root = tmp("pg-cg2-");
    const own = join(root, "job.slice", "runner");
    mkdirSync(own, { recursive: true });
    writeFileSync(join(root, "cgroup.controllers"), "cpu memory pids");
    writeFileSync(join(own, "cgroup.subtree_control"), "cpu");
    expect(findControllers(root, V2_SELF)).toBeNull();
    writeFileSync(join(own, "cgroup.subtree_control"), "cpu memory pids");
    const ctl = findControllers(root, V2_SELF);
    expect(ctl).toEqual({ version: 2, parent: own });
    const cg = createJobCgroup(ctl, { memoryBytes: 1 << 28, pids: 64 });
    expect(cg).not.toBeNull();
    const dir = (cg?.procsFiles[0] ?? "").replace(/\/cgroup\.procs$/, "");
    expect(readFileSync(join(dir, "memory.max"), "utf8")).toBe(String(1 << 28));
    expect(readFileSync(join(dir, "pids.max"), "utf8")).toBe("64");
    expect(cg?.limitHit()).toBeNull();
    writeFileSync(join(dir, "pids.events"), "max 4\n");
    expect(cg?.limitHit()).toBe("pids");
    writeFileSync(join(dir, "memory.events"), "low 0\noom_kill 1\n");
    expect(cg?.limitHit()).toBe("memory");
    writeFileSync(join(dir, "memory.peak"), "12345\n");
    expect(cg?.memoryPeak()).toBe(12345);
  });

  it("gives no cgroup where there are no controllers", () => {
    expect(createJobCgroup(null, { memoryBytes: 1, pids: 1 })).toBeNull();
  });
});

const real = findControllers();

describe.skipIf(!real)("a cgroup on this machine", () => {
  it("holds a process, meters its memory from outside, kills it and is removed", async () => {
    const cg = createJobCgroup(real, { memoryBytes: 256 << 20, pids: 32 });
    expect(cg).not.toBeNull();
    if (!cg) return;
    const join_ = 'for f in "$@"; do echo $$ > "$f"; done; exec /usr/bin/python3 -c "x = b\\"y\\" * (32 << 20); import time; time.sleep(60)"';
    const child = execa("/bin/sh", ["-c", join_, "sh", ...cg.procsFiles], { reject: false });
    const t0 = Date.now();
    while ((cg.memoryPeak() ?? 0) < 32 << 20 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 50));
    expect(cg.memoryPeak()).toBeGreaterThanOrEqual(32 << 20);
    expect(cg.limitHit()).toBeNull();
    cg.killAll();
    const r = await child;
    expect(r.signal).toBe("SIGKILL");
    await cg.remove();
    for (const f of cg.procsFiles) expect(existsSync(f.replace(/\/cgroup\.procs$/, ""))).toBe(false);
  });
});
