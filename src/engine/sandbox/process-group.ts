import { readdirSync, readFileSync } from "node:fs";

const PAGE_SIZE = 4096;

interface Stat {
  pgid: number;
  rssBytes: number;
}

function readStat(pid: number): Stat | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // comm may hold spaces and parens: fields resume after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // A zombie holds no memory and runs nothing; where init does not reap (containers) it lingers.
    if (fields[0] === "Z") return null;
    return { pgid: Number(fields[2]), rssBytes: Number(fields[21]) * PAGE_SIZE };
  } catch {
    return null; // The process ended, or this is not Linux.
  }
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").split(" ")) if (c) out.push(Number(c));
    } catch {
      // The thread ended between readdir and read.
    }
  }
  return out;
}

/** Every pid whose process group is `pgid`, from a scan of all of /proc. */
export function scanGroup(pgid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    if (readStat(Number(name))?.pgid === pgid) pids.push(Number(name));
  }
  return pids;
}

/**
 * Measures the processes and resident bytes of one process group (Linux; zeros elsewhere).
 *
 * Reading every /proc/N/stat of the machine ten times a second costs the runner real CPU on a
 * busy host, so most samples walk the group leader's process tree (/proc/PID/task/TID/children),
 * a handful of reads. A process that leaves the tree (double fork, reparented to init) still
 * carries the group id: every `fullScanEvery`-th sample scans all of /proc for the group, and any
 * process found outside the tree is tracked as a root from then on.
 */
export class GroupMeter {
  private readonly roots = new Set<number>();
  private samples = 0;

  constructor(
    private readonly pgid: number,
    private readonly fullScanEvery = 10,
  ) {
    this.roots.add(pgid);
  }

  sample(): { processes: number; rssBytes: number } {
    if (this.samples++ % this.fullScanEvery === 0) for (const pid of scanGroup(this.pgid)) this.roots.add(pid);
    const seen = new Set<number>();
    let rssBytes = 0;
    const stack = [...this.roots];
    while (stack.length) {
      const pid = stack.pop()!;
      if (seen.has(pid)) continue;
      const stat = readStat(pid);
      if (!stat) {
        this.roots.delete(pid);
        continue;
      }
      // A child that called setpgid/setsid is no longer this group's; killGroup could not reach it
      // either, so it is counted here (it is still this run's memory) and left to the scan of record.
      seen.add(pid);
      rssBytes += stat.rssBytes;
      stack.push(...childrenOf(pid));
    }
    return { processes: seen.size, rssBytes };
  }
}

/** Processes and resident bytes of one process group, from one full scan of /proc. */
export function groupUsage(pgid: number): { processes: number; rssBytes: number } {
  return new GroupMeter(pgid, 1).sample();
}

/** SIGKILL to a whole process group; a group already gone is fine. */
export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e;
  }
}
