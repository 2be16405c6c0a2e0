import { spawn, type ChildProcess } from "node:child_process";
import { execa } from "execa";
import { createInterface } from "node:readline";
import { formatBytes } from "../core/sizes.js";

/**
 * GPU memory of record for one phase, measured outside the sandbox by the driver (nvidia-smi, i.e.
 * NVML): the most the job's GPUs held at once above what they held when the phase began. It counts
 * what the caching allocator never sees (CUDA context, cuBLAS workspace, NCCL buffers), and nothing
 * the submission does inside its process can change it.
 */
export interface GpuMemoryPeak {
  /** The GPUs measured (indices as nvidia-smi numbers them), given to this job alone. */
  gpus: number[];
  /** Σ over those GPUs of memory used when the phase began (before any rank started). */
  baselineBytes: number;
  /** Max over samples of Σ (used − baseline), never below 0. */
  peakBytes: number;
  samples: number;
  intervalMs: number;
}

/** ", GPU peak 1.2 GiB" for a phase's progress line; nothing where no GPU was measured. */
export function gpuNote(peak: GpuMemoryPeak | null): string {
  return peak ? `, GPU peak ${formatBytes(peak.peakBytes)}` : "";
}

/** A running meter; `stop()` ends it and gives the peak, or null when the GPUs could not be read. */
export interface GpuMeter {
  /** Whether the GPUs hold more than `limitBytes` above their baseline now (false with no limit). */
  overLimit(): boolean;
  stop(): Promise<GpuMemoryPeak | null>;
}

const MIB = 1024 * 1024;

/** The nvidia-smi to use: PROBEGATE_NVIDIA_SMI (tests, unusual installs), else the one on PATH. */
export function nvidiaSmiPath(): string {
  return process.env.PROBEGATE_NVIDIA_SMI || "nvidia-smi";
}

/**
 * Parses nvidia-smi's `--query-gpu=index,memory.used --format=csv,noheader,nounits` lines
 * ("0, 1234": MiB). Returns null for a line that is not one (a warning, "[N/A]", a blank).
 */
export function parseUsedLine(line: string): { index: number; usedBytes: number } | null {
  const m = /^\s*(\d+)\s*,\s*(\d+(?:\.\d+)?)\s*$/.exec(line);
  if (!m) return null;
  return { index: Number(m[1]), usedBytes: Math.round(Number(m[2]) * MIB) };
}

/**
 * Starts sampling `gpus` every `intervalMs` with one long-lived `nvidia-smi --loop-ms` (one process
 * for the whole phase, not one per sample). The first reading of each GPU is its baseline, so start
 * it before the phase's processes do: `ready` settles once every GPU has been read once (or after
 * `readyTimeoutMs`, when the meter gives up and `stop()` gives null). No GPUs: null at once.
 */
export async function startGpuMeter(
  gpus: readonly number[],
  opts: { intervalMs?: number; readyTimeoutMs?: number; nvidiaSmi?: string; limitBytes?: number } = {},
): Promise<GpuMeter> {
  const none: GpuMeter = { overLimit: () => false, stop: async () => null };
  if (gpus.length === 0) return none;
  const intervalMs = Math.max(50, Math.floor(opts.intervalMs ?? 200));
  const wanted = new Set(gpus);
  const baseline = new Map<number, number>();
  const latest = new Map<number, number>();
  let peak = 0;
  let current = 0;
  let samples = 0;
  let failed = false;

  let child: ChildProcess;
  try {
    child = spawn(opts.nvidiaSmi ?? nvidiaSmiPath(), ["--query-gpu=index,memory.used", "--format=csv,noheader,nounits", `--id=${gpus.join(",")}`, `--loop-ms=${intervalMs}`], {
      stdio: ["ignore", "pipe", "ignore"],
    });
  } catch {
    return none;
  }
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const exited = new Promise<void>((resolve) => {
    child.once("error", () => {
      failed = true;
      resolve();
      markReady();
    });
    child.once("exit", () => {
      resolve();
      markReady();
    });
  });
  const lines = createInterface({ input: child.stdout! });
  lines.on("line", (line) => {
    const r = parseUsedLine(line);
    if (!r || !wanted.has(r.index)) return;
    if (!baseline.has(r.index)) {
      baseline.set(r.index, r.usedBytes);
      if (baseline.size === wanted.size) markReady();
    }
    latest.set(r.index, r.usedBytes);
    samples += 1;
    let sum = 0;
    for (const [i, used] of latest) sum += used - (baseline.get(i) ?? used);
    current = sum;
    peak = Math.max(peak, sum);
  });
  const timer = setTimeout(markReady, opts.readyTimeoutMs ?? 5000);
  await ready;
  clearTimeout(timer);

  const limit = opts.limitBytes;
  return {
    overLimit: () => limit !== undefined && current > limit,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const hard = setTimeout(() => child.kill("SIGKILL"), 2000);
        await exited;
        clearTimeout(hard);
      }
      await exited;
      lines.close();
      if (failed || baseline.size !== wanted.size) return null;
      let base = 0;
      for (const b of baseline.values()) base += b;
      return { gpus: [...gpus], baselineBytes: base, peakBytes: peak, samples, intervalMs };
    },
  };
}

/**
 * Memory used on each of `gpus` now (bytes), from one nvidia-smi query; null where the driver
 * cannot be read. The job pool takes each GPU's idle baseline with it, and gives a GPU to the next
 * job only once it reads back at that baseline.
 */
export async function readGpuUsed(gpus: readonly number[], opts: { nvidiaSmi?: string; timeoutMs?: number } = {}): Promise<Map<number, number> | null> {
  if (gpus.length === 0) return new Map();
  const r = await execa(opts.nvidiaSmi ?? nvidiaSmiPath(), ["--query-gpu=index,memory.used", "--format=csv,noheader,nounits", `--id=${gpus.join(",")}`], {
    reject: false,
    timeout: opts.timeoutMs ?? 10_000,
  });
  if (r.exitCode !== 0 || typeof r.stdout !== "string") return null;
  const used = new Map<number, number>();
  for (const line of r.stdout.split("\n")) {
    const u = parseUsedLine(line);
    if (u && gpus.includes(u.index)) used.set(u.index, u.usedBytes);
  }
  return used.size === gpus.length ? used : null;
}
