import { spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { GroupMeter, groupUsage, killGroup, scanGroup } from "../../../src/engine/sandbox/process-group.js";

const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) killGroup(pid);
});

/** A group of four: the shell, two child sleepers, and a sleeper that escaped the tree by double fork. */
async function groupWithEscapee(): Promise<number> {
  const child = spawn("sh", ["-c", "sleep 30 & (sleep 31 &); sleep 32"], { detached: true, stdio: "ignore" });
  const pid = child.pid!;
  started.push(pid);
  for (let i = 0; i < 50 && scanGroup(pid).length < 4; i++) await sleep(50);
  await sleep(100); // let the subshell that forked the escapee exit
  return pid;
}

describe.runIf(process.platform === "linux")("GroupMeter", () => {
  it("counts a process that left the tree but kept the group, and keeps tracking it between full scans", async () => {
    const pgid = await groupWithEscapee();
    expect(scanGroup(pgid)).toHaveLength(4);
    const meter = new GroupMeter(pgid, 1000);
    const first = meter.sample(); // the first sample is a full scan
    const second = meter.sample(); // tree walk from the leader and the escapee found by the scan
    expect(first.processes).toBe(4);
    expect(second.processes).toBe(4);
    expect(second.rssBytes).toBeGreaterThan(0);
    expect(groupUsage(pgid).processes).toBe(4);
  });

  it("finds an escapee that appears after the first scan at the next full scan", async () => {
    const child = spawn("sh", ["-c", "sleep 0.3; (sleep 30 &); sleep 30"], { detached: true, stdio: "ignore" });
    const pgid = child.pid!;
    started.push(pgid);
    await sleep(100);
    const meter = new GroupMeter(pgid, 3);
    expect(meter.sample().processes).toBe(2); // full scan: the shell and its first sleep
    await sleep(600);
    expect(meter.sample().processes).toBe(2); // tree walk: the shell and its child; the escapee is unseen
    expect(meter.sample().processes).toBe(2);
    expect(meter.sample().processes).toBe(3); // full scan again
  });

  it("reads nothing once the group is killed", async () => {
    const pgid = await groupWithEscapee();
    const meter = new GroupMeter(pgid);
    expect(meter.sample().processes).toBe(4);
    killGroup(pgid);
    for (let i = 0; i < 50 && scanGroup(pgid).length > 0; i++) await sleep(20);
    expect(meter.sample()).toEqual({ processes: 0, rssBytes: 0 });
    expect(() => killGroup(pgid)).not.toThrow();
  });
});
