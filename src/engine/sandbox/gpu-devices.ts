import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { HarnessError } from "../errors.js";
import { nvidiaSmiPath } from "../gpu-meter.js";

/**
 * One GPU as the driver knows it: nvidia-smi's index (what `CUDA_VISIBLE_DEVICES` and the job pool
 * use), its PCI bus id, and its device minor number (the N of `/dev/nvidiaN`). The index and the
 * minor are different numbers: the index is the driver's enumeration of the GPUs this machine (or
 * container) sees, the minor is fixed per board on the host, so a container given GPUs 4–7 of a host
 * sees them as indices 0–3 behind `/dev/nvidia4`…`/dev/nvidia7`.
 */
export interface GpuNode {
  index: number;
  /** PCI bus id, normalised to `dddd:bb:dd.f` (lower case, 4-digit domain). */
  busId: string | null;
  /** The device minor number; null where the driver did not say. */
  minor: number | null;
  /** Where the minor number came from, for messages. */
  source: "proc" | "nvidia-smi -q" | null;
}

/** `00000000:17:00.0` (nvidia-smi) and `0000:17:00.0` (/proc, sysfs) both become `0000:17:00.0`. */
export function normalizeBusId(raw: string): string | null {
  const m = /^\s*([0-9a-f]+):([0-9a-f]{2}):([0-9a-f]{2})\.([0-9a-f])\s*$/i.exec(raw);
  if (!m) return null;
  const domain = Number.parseInt(m[1] as string, 16).toString(16).padStart(4, "0");
  return `${domain}:${m[2]}:${m[3]}.${m[4]}`.toLowerCase();
}

/** Parses `nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader` lines into index → bus id. */
export function parseIndexBusIds(csv: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const line of csv.split("\n")) {
    const [index, bus] = line.split(",").map((s) => s.trim());
    const busId = bus ? normalizeBusId(bus) : null;
    if (index && /^\d+$/.test(index) && busId) out.set(Number(index), busId);
  }
  return out;
}

/**
 * Parses `nvidia-smi -q` into bus id → minor number: each GPU's section starts with a line
 * `GPU 00000000:17:00.0` and holds `Minor Number : 4` (`N/A` on drivers that have no device file
 * for it, e.g. some MIG or WSL set-ups: left out, so the GPU is reported as unknown).
 */
export function parseSmiQueryMinors(text: string): Map<string, number> {
  const out = new Map<string, number>();
  let bus: string | null = null;
  for (const line of text.split("\n")) {
    const head = /^GPU\s+([0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$/.exec(line);
    if (head) {
      bus = normalizeBusId(head[1] as string);
      continue;
    }
    const minor = /^\s+Minor Number\s*:\s*(\d+)\s*$/.exec(line);
    if (minor && bus) out.set(bus, Number(minor[1]));
  }
  return out;
}

/** Reads `Device Minor: N` from `/proc/driver/nvidia/gpus/<bus>/information`; null without it. */
export function parseProcInformation(text: string): number | null {
  const m = /^Device Minor:\s*(\d+)\s*$/m.exec(text);
  return m ? Number(m[1]) : null;
}

/**
 * Joins what the driver said into one node per GPU index. `procMinors` (from /proc/driver/nvidia)
 * wins over `smiMinors` (from `nvidia-smi -q`): both come from the driver, /proc is cheaper.
 */
export function joinGpuNodes(indices: readonly number[], busIds: ReadonlyMap<number, string>, procMinors: ReadonlyMap<string, number>, smiMinors: ReadonlyMap<string, number>): GpuNode[] {
  return indices.map((index) => {
    const busId = busIds.get(index) ?? null;
    const proc = busId === null ? undefined : procMinors.get(busId);
    if (proc !== undefined) return { index, busId, minor: proc, source: "proc" as const };
    const smi = busId === null ? undefined : smiMinors.get(busId);
    if (smi !== undefined) return { index, busId, minor: smi, source: "nvidia-smi -q" as const };
    return { index, busId, minor: null, source: null };
  });
}

/** The control devices CUDA opens besides a GPU's own node (`/dev/nvidiactl`, `-uvm`, …), those that exist under `dev`. */
export function controlDevices(dev = "/dev"): string[] {
  if (!existsSync(dev)) return [];
  const control = readdirSync(dev)
    .filter((n) => /^nvidia(ctl|-uvm|-uvm-tools|-modeset)$/.test(n))
    .sort()
    .map((n) => join(dev, n));
  return existsSync(join(dev, "nvidia-caps")) ? [...control, join(dev, "nvidia-caps")] : control;
}

/** A GPU the sandbox cannot be given, with why, in words that name it. */
export interface MissingGpuNode {
  index: number;
  why: string;
}

/**
 * The device nodes of `indices` (through the driver's minor numbers) and, separately, each GPU
 * whose node cannot be named or does not exist. Pure but for `exists`, which tests replace.
 */
export function resolveGpuNodes(indices: readonly number[], nodes: readonly GpuNode[], dev = "/dev", exists: (p: string) => boolean = existsSync): { devices: string[]; missing: MissingGpuNode[] } {
  const devices: string[] = [];
  const missing: MissingGpuNode[] = [];
  for (const index of indices) {
    const node = nodes.find((n) => n.index === index);
    const bus = node?.busId ? ` (PCI ${node.busId})` : "";
    if (!node || node.minor === null) {
      missing.push({ index, why: `GPU ${index}${bus}: the driver gave no minor number for it (neither /proc/driver/nvidia/gpus nor \`nvidia-smi -q\` "Minor Number"), so its /dev/nvidiaN is unknown` });
      continue;
    }
    const path = join(dev, `nvidia${node.minor}`);
    if (!exists(path)) {
      missing.push({ index, why: `GPU ${index}${bus}: its device node ${path} (minor number ${node.minor}, from ${node.source}) does not exist` });
      continue;
    }
    devices.push(path);
  }
  return { devices, missing };
}

/** The error an evaluation ends in when a GPU it was given has no device node for the sandbox. */
export function missingGpuError(missing: readonly MissingGpuNode[]): HarnessError {
  return new HarnessError(
    `the sandbox cannot be given ${missing.length === 1 ? "a GPU" : "GPUs"} of this runner: ${missing.map((m) => m.why).join("; ")}. CUDA would fail inside the sandbox, so nothing was run. Give the runner (container) the device node of each GPU it sees (with the NVIDIA container toolkit: the GPU's /dev/nvidiaN with /dev/nvidiactl and /dev/nvidia-uvm), or pass --gpus to leave the GPU out; \`probegate doctor\` checks this.`,
    "sandbox",
  );
}

const nodesCache = new Map<string, Promise<GpuNode[]>>();

/**
 * Asks the driver for each GPU's minor number: nvidia-smi for index → PCI bus id, then
 * `/proc/driver/nvidia/gpus/<bus>/information`, and `nvidia-smi -q` for any GPU /proc did not
 * cover (containers often mask /proc/driver). Cached per process and nvidia-smi: GPUs do not move.
 */
export function readGpuNodes(indices: readonly number[], smi = nvidiaSmiPath(), procRoot = "/proc/driver/nvidia/gpus"): Promise<GpuNode[]> {
  const key = `${smi}\0${procRoot}`;
  let all = nodesCache.get(key);
  if (!all) {
    all = (async () => {
      const q = await execa(smi, ["--query-gpu=index,pci.bus_id", "--format=csv,noheader"], { reject: false, timeout: 30_000 });
      const busIds = q.exitCode === 0 ? parseIndexBusIds(String(q.stdout)) : new Map<number, string>();
      const procMinors = new Map<string, number>();
      if (existsSync(procRoot)) {
        for (const name of readdirSync(procRoot)) {
          const bus = normalizeBusId(name);
          let minor: number | null = null;
          try {
            minor = parseProcInformation(readFileSync(join(procRoot, name, "information"), "utf8"));
          } catch {
            // Unreadable: nvidia-smi -q below.
          }
          if (bus && minor !== null) procMinors.set(bus, minor);
        }
      }
      let smiMinors = new Map<string, number>();
      if ([...busIds.values()].some((b) => !procMinors.has(b))) {
        const full = await execa(smi, ["-q"], { reject: false, timeout: 60_000 });
        if (full.exitCode === 0) smiMinors = parseSmiQueryMinors(String(full.stdout));
      }
      return joinGpuNodes([...busIds.keys()].sort((a, b) => a - b), busIds, procMinors, smiMinors);
    })();
    nodesCache.set(key, all);
    all.catch(() => nodesCache.delete(key));
  }
  return all.then((nodes) => indices.map((index) => nodes.find((n) => n.index === index) ?? { index, busId: null, minor: null, source: null }));
}
