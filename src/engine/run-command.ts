import { existsSync } from "node:fs";
import { execa } from "execa";
import { formatIdList } from "../core/packing.js";
import { createJobCgroup, type CgroupControllers } from "./sandbox/cgroup.js";
import { treeBytes } from "./sandbox/disk-usage.js";
import { GroupMeter, killGroup } from "./sandbox/process-group.js";
import { sandboxArgv, type SandboxSpec } from "./sandbox/sandbox.js";

export interface RunLimits {
  /** Seconds before the whole process group is killed. */
  timeoutS: number;
  /** stdout+stderr bytes after which the group is killed. */
  outputBytes: number;
  /** Memory of the run: the cgroup's limit where there is one, and the sampled group RSS in any case. */
  memoryBytes: number;
  /** Processes (threads too, where a cgroup counts them) the run may have at once. */
  processes: number;
  /** Bytes the run may add to the folders it can write, and the largest file it may write. */
  diskBytes: number;
  /**
   * Whether the job's GPUs hold more than the task allows right now (the engine's GPU meter,
   * outside the sandbox); polled with the memory sample, and the whole group is killed when true.
   */
  gpuMemoryExceeded?: () => boolean;
}

/** How a run is isolated: the sandbox (null: unsandboxed) and the cgroup controllers (null: none usable). */
export interface RunIsolation {
  sandbox: SandboxSpec | null;
  cgroups: CgroupControllers | null;
  /** Host folders the run can write, watched for the disk limit. */
  writable: readonly string[];
}

export type RunLimit = "wall-clock" | "output" | "memory" | "gpu-memory" | "pids" | "disk";

export interface RunOutcome {
  exitCode: number | null;
  signal: string | null;
  /** The limit that stopped the run, if one did. */
  limit: RunLimit | null;
  durationS: number;
  /** Highest sampled resident memory of the whole process group. */
  peakRssBytes: number;
  /** Memory of record, measured outside the run: the cgroup's peak, else the sampled group RSS. */
  peakMemoryBytes: number;
  memorySource: "cgroup" | "sampled";
  /** The first and last part of the output, for runner-side logs only. */
  log: string;
  /** Set when the command could not be started at all (missing interpreter, bad cwd). */
  spawnError: string | null;
}

const KEEP = 64 * 1024;
const SAMPLE_MS = 100;
const DISK_SAMPLE_MS = 250;

/** Joins the cgroups named before `--`, then execs the rest: the run is inside before it starts. */
const JOIN_CGROUP = 'while [ "$1" != -- ]; do { echo $$ > "$1"; } 2>/dev/null || exit 125; shift; done; shift; exec "$@"';

/**
 * Runs a command in its own process group with a clean environment, in the sandbox when one is
 * given and in a cgroup of its own where the machine has one. Every limit kills the whole group (the
 * ranks a test spawns included), and the group and cgroup are killed again after the leader exits,
 * so nothing outlives the run. Everything of record (time, memory, exit, limit) is measured here,
 * outside the sandbox.
 */
export async function runCommand(
  command: readonly string[],
  opts: {
    cwd: string;
    env: Record<string, string>;
    limits: RunLimits;
    isolation?: RunIsolation;
    cpus?: readonly number[];
    /** Written to the command's stdin, which is then closed (the probe launcher's configuration); none: /dev/null. */
    input?: string;
  },
): Promise<RunOutcome> {
  if (command.length === 0) throw new TypeError("empty command");
  const iso = opts.isolation ?? { sandbox: null, cgroups: null, writable: [] };
  const cg = createJobCgroup(iso.cgroups, { memoryBytes: opts.limits.memoryBytes, pids: opts.limits.processes });
  const sandboxed = iso.sandbox ? sandboxArgv(iso.sandbox, command) : [...command];
  // Pinned from outside the sandbox; every process of the run inherits the mask.
  const taskset = opts.cpus?.length ? tasksetPath() : null;
  const inner = taskset ? [taskset, "-c", formatIdList(opts.cpus ?? []), ...sandboxed] : sandboxed;
  const argv = cg ? ["/bin/sh", "-c", JOIN_CGROUP, "probegate-join", ...cg.procsFiles, "--", ...inner] : inner;
  const [file, ...args] = argv as [string, ...string[]];
  const diskBase = iso.writable.length ? treeBytes(iso.writable) : 0;
  const started = performance.now();
  const child = execa(file, args, {
    cwd: opts.cwd,
    env: opts.env,
    extendEnv: false,
    detached: true,
    reject: false,
    ...(opts.input !== undefined ? { input: opts.input } : { stdin: "ignore" as const }),
    buffer: false,
    stripFinalNewline: false,
  });
  let head = "";
  let tail = "";
  let total = 0;
  let limit: RunOutcome["limit"] = null;
  let peak = 0;
  const pgid = child.pid;
  const stop = (why: RunLimit) => {
    if (limit) return;
    limit = why;
    if (pgid) killGroup(pgid);
    cg?.killAll();
  };
  const onData = (chunk: Buffer) => {
    total += chunk.length;
    if (head.length < KEEP) head += chunk.toString("utf8", 0, Math.min(chunk.length, KEEP - head.length));
    else tail = (tail + chunk.toString("utf8")).slice(-KEEP);
    if (total > opts.limits.outputBytes) stop("output");
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const timer = setTimeout(() => stop("wall-clock"), opts.limits.timeoutS * 1000);
  const meter = pgid ? new GroupMeter(pgid) : undefined;
  const sampler = meter
    ? setInterval(() => {
        const { rssBytes, processes } = meter.sample();
        peak = Math.max(peak, rssBytes);
        // With a cgroup the kernel enforces both limits exactly; summed RSS counts pages that forked
        // processes share once per process, so it decides only where there is no cgroup.
        const hit = cg ? cg.limitHit() : processes > opts.limits.processes ? "pids" : rssBytes > opts.limits.memoryBytes ? "memory" : null;
        if (hit) stop(hit);
        else if (opts.limits.gpuMemoryExceeded?.()) stop("gpu-memory");
      }, SAMPLE_MS)
    : undefined;
  const diskWatch = iso.writable.length
    ? setInterval(() => {
        if (treeBytes(iso.writable) - diskBase > opts.limits.diskBytes) stop("disk");
      }, DISK_SAMPLE_MS)
    : undefined;
  const result = await child;
  const durationS = (performance.now() - started) / 1000;
  clearTimeout(timer);
  if (sampler) clearInterval(sampler);
  if (diskWatch) clearInterval(diskWatch);
  if (pgid) killGroup(pgid);
  // The kernel's word on what stopped the run: an OOM kill or a refused fork, seen only now.
  const kernelLimit = cg?.limitHit() ?? null;
  if (!limit && kernelLimit) limit = kernelLimit;
  if (!limit && result.signal === "SIGXFSZ") limit = "disk";
  if (!limit && iso.writable.length && treeBytes(iso.writable) - diskBase > opts.limits.diskBytes) limit = "disk";
  const cgroupPeak = cg?.memoryPeak() ?? null;
  await cg?.remove();
  const joinFailed = cg !== null && result.exitCode === 125 && total === 0;
  const spawnError = joinFailed
    ? "could not join the run's cgroup"
    : result.failed && result.exitCode === undefined && !result.signal
      ? (result.shortMessage ?? "could not start")
      : null;
  return {
    exitCode: result.exitCode ?? null,
    signal: result.signal ?? null,
    limit,
    durationS,
    peakRssBytes: peak,
    peakMemoryBytes: cgroupPeak ?? peak,
    memorySource: cgroupPeak !== null ? "cgroup" : "sampled",
    log: tail ? `${head}\n…[${total - head.length - tail.length} bytes left out]…\n${tail}` : head,
    spawnError,
  };
}

/** util-linux's taskset, where the machine has it (pins a run to the cores of its slice). */
export function tasksetPath(): string | null {
  return ["/usr/bin/taskset", "/bin/taskset", "/usr/local/bin/taskset"].find((p) => existsSync(p)) ?? null;
}
