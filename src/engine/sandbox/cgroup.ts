import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Where this machine's memory and pids controllers can be used: one cgroup v2 folder, or two v1 ones. */
export type CgroupControllers = { version: 2; parent: string } | { version: 1; memory: string; pids: string };

/** Limits the kernel enforces on every process of one run, however it forks, setsid()s or hides. */
export interface CgroupLimits {
  memoryBytes: number;
  pids: number;
}

/** One run's cgroup, made before the run and removed after it. */
export interface JobCgroup {
  /** `cgroup.procs` files a process writes its own pid into to join (before it execs the sandbox). */
  procsFiles: string[];
  /** Peak memory of the whole group (page cache and tmpfs included), read from the kernel. */
  memoryPeak(): number | null;
  /** The limit the kernel enforced, if it did: an OOM kill, or a fork refused at the pids limit. */
  limitHit(): "memory" | "pids" | null;
  /** SIGKILL to every process still in the group. */
  killAll(): void;
  /** Removes the group, waiting a moment for killed processes to leave it. */
  remove(): Promise<void>;
}

const FILES = {
  1: { memMax: "memory.limit_in_bytes", memPeak: "memory.max_usage_in_bytes", memEvents: "memory.oom_control" },
  2: { memMax: "memory.max", memPeak: "memory.peak", memEvents: "memory.events" },
} as const;

/** The cgroup path of this process for one v1 controller ("" for v2), from /proc/self/cgroup. */
export function ownCgroupPath(procSelfCgroup: string, controller: string | null): string | null {
  for (const line of procSelfCgroup.split("\n")) {
    const [, names, path] = line.split(":");
    if (names === undefined || path === undefined) continue;
    if (controller === null ? names === "" && line.startsWith("0::") : names.split(",").includes(controller)) return path;
  }
  return null;
}

/** Reads `key N` from a flat keyed cgroup file ("oom_kill 3", "max 12"); 0 when absent. */
export function keyedCount(text: string, key: string): number {
  const m = text.match(new RegExp(`^${key} (\\d+)$`, "m"));
  return m ? Number(m[1]) : 0;
}

const writable = (dir: string) => {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
};

const read = (p: string) => {
  try {
    return readFileSync(p, "utf8");
  } catch {
    return "";
  }
};

/**
 * Finds usable memory and pids controllers under `root`: cgroup v2 when this process's own group
 * delegates both to children and is writable, else v1 hierarchies writable here. Null where neither is.
 */
export function findControllers(root = "/sys/fs/cgroup", procSelfCgroup = read("/proc/self/cgroup")): CgroupControllers | null {
  const v2own = ownCgroupPath(procSelfCgroup, null);
  const v2root = existsSync(join(root, "cgroup.controllers")) ? root : existsSync(join(root, "unified", "cgroup.controllers")) ? join(root, "unified") : null;
  if (v2root && v2own !== null) {
    const parent = join(v2root, v2own);
    const delegated = read(join(parent, "cgroup.subtree_control")).split(/\s+/);
    if (delegated.includes("memory") && delegated.includes("pids") && writable(parent)) return { version: 2, parent };
  }
  const mem = ownCgroupPath(procSelfCgroup, "memory");
  const pids = ownCgroupPath(procSelfCgroup, "pids");
  if (mem !== null && pids !== null && existsSync(join(root, "memory", "cgroup.procs")) && existsSync(join(root, "pids", "cgroup.procs"))) {
    const ctl = { version: 1 as const, memory: join(root, "memory", mem), pids: join(root, "pids", pids) };
    if (writable(ctl.memory) && writable(ctl.pids)) return ctl;
  }
  return null;
}

let counter = 0;

/**
 * Makes a cgroup for one run with memory and pids limits. Null when the controllers cannot be used
 * here (not writable, not delegated): the caller then falls back to sampling from /proc.
 */
export function createJobCgroup(ctl: CgroupControllers | null, limits: CgroupLimits): JobCgroup | null {
  if (!ctl) return null;
  const name = `probegate-${process.pid}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;
  const memDir = join(ctl.version === 2 ? ctl.parent : ctl.memory, name);
  const pidsDir = ctl.version === 2 ? memDir : join(ctl.pids, name);
  const dirs = [...new Set([memDir, pidsDir])];
  const f = FILES[ctl.version];
  try {
    for (const d of dirs) mkdirSync(d);
    writeFileSync(join(memDir, f.memMax), String(limits.memoryBytes));
    writeFileSync(join(pidsDir, "pids.max"), String(limits.pids));
  } catch {
    for (const d of dirs) {
      try {
        rmdirSync(d);
      } catch {
        // It was never made.
      }
    }
    return null;
  }
  // No swap: a memory bomb must meet the limit, not page the runner to a crawl. Not every kernel has it.
  const swap = join(memDir, ctl.version === 2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes");
  try {
    if (existsSync(swap)) writeFileSync(swap, ctl.version === 2 ? "0" : String(limits.memoryBytes));
  } catch {
    // Swap accounting off: the memory limit still holds for resident memory.
  }
  const pidsOf = () =>
    dirs.flatMap((d) =>
      read(join(d, "cgroup.procs"))
        .split("\n")
        .filter(Boolean)
        .map(Number),
    );
  const killAll = () => {
    for (const pid of pidsOf()) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
  };
  return {
    procsFiles: dirs.map((d) => join(d, "cgroup.procs")),
    memoryPeak: () => {
      const v = Number(read(join(memDir, f.memPeak)).trim());
      return Number.isFinite(v) && v > 0 ? v : null;
    },
    limitHit: () => {
      if (keyedCount(read(join(memDir, f.memEvents)), "oom_kill") > 0) return "memory";
      if (keyedCount(read(join(pidsDir, "pids.events")), "max") > 0) return "pids";
      return null;
    },
    killAll,
    remove: async () => {
      for (let i = 0; i < 50 && pidsOf().length > 0; i++) {
        killAll();
        await new Promise((r) => setTimeout(r, 20));
      }
      for (const d of dirs) {
        try {
          rmdirSync(d);
        } catch {
          // A process that would not die keeps its group; the kernel frees it when it does.
        }
      }
    },
  };
}
