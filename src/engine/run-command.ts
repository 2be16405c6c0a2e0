import { execa } from "execa";
import { GroupMeter, killGroup } from "./process-group.js";

export interface RunLimits {
  /** Seconds before the whole process group is killed. */
  timeoutS: number;
  /** stdout+stderr bytes after which the group is killed. */
  outputBytes: number;
  /** Resident bytes of the group (sampled) after which it is killed. */
  memoryBytes: number;
}

export interface RunOutcome {
  exitCode: number | null;
  signal: string | null;
  /** The limit that stopped the run, if one did. */
  limit: "wall-clock" | "output" | "memory" | null;
  durationS: number;
  /** Highest sampled resident memory of the whole process group. */
  peakRssBytes: number;
  /** The first and last part of the output, for runner-side logs only. */
  log: string;
  /** Set when the command could not be started at all (missing interpreter, bad cwd). */
  spawnError: string | null;
}

const KEEP = 64 * 1024;
const SAMPLE_MS = 100;

/**
 * Runs a command in its own process group with a clean environment. Every limit kills the whole
 * group (the ranks a test spawns included), and the group is killed again after the leader exits,
 * so nothing outlives the run.
 */
export async function runCommand(
  argv: readonly string[],
  opts: { cwd: string; env: Record<string, string>; limits: RunLimits },
): Promise<RunOutcome> {
  const [file, ...args] = argv;
  if (!file) throw new TypeError("empty command");
  const started = performance.now();
  const child = execa(file, args, {
    cwd: opts.cwd,
    env: opts.env,
    extendEnv: false,
    detached: true,
    reject: false,
    stdin: "ignore",
    buffer: false,
    stripFinalNewline: false,
  });
  let head = "";
  let tail = "";
  let total = 0;
  let limit: RunOutcome["limit"] = null;
  let peak = 0;
  const pgid = child.pid;
  const stop = (why: NonNullable<RunOutcome["limit"]>) => {
    if (limit) return;
    limit = why;
    if (pgid) killGroup(pgid);
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
        const { rssBytes } = meter.sample();
        peak = Math.max(peak, rssBytes);
        if (rssBytes > opts.limits.memoryBytes) stop("memory");
      }, SAMPLE_MS)
    : undefined;
  const result = await child;
  clearTimeout(timer);
  if (sampler) clearInterval(sampler);
  if (pgid) killGroup(pgid);
  const spawnError = result.failed && result.exitCode === undefined && !result.signal ? (result.shortMessage ?? "could not start") : null;
  return {
    exitCode: result.exitCode ?? null,
    signal: result.signal ?? null,
    limit,
    durationS: (performance.now() - started) / 1000,
    peakRssBytes: peak,
    log: tail ? `${head}\n…[${total - head.length - tail.length} bytes left out]…\n${tail}` : head,
    spawnError,
  };
}
