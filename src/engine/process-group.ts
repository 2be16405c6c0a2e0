import { readdirSync, readFileSync } from "node:fs";

const PAGE_SIZE = 4096;

/** Processes and resident bytes of one process group, read from /proc (Linux); zeros elsewhere. */
export function groupUsage(pgid: number): { processes: number; rssBytes: number } {
  let processes = 0;
  let rssBytes = 0;
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return { processes, rssBytes };
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // comm may hold spaces and parens: fields resume after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) !== pgid) continue;
      processes++;
      rssBytes += Number(fields[21]) * PAGE_SIZE;
    } catch {
      // The process ended between readdir and read.
    }
  }
  return { processes, rssBytes };
}

/** SIGKILL to a whole process group; a group already gone is fine. */
export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e;
  }
}
