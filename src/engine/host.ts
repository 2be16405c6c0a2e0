import { existsSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { execa } from "execa";
import { parseIdList } from "../core/packing.js";
import { HarnessError } from "./errors.js";
import { nvidiaSmiPath } from "./gpu-meter.js";

export interface GpuInfo {
  index: number;
  model: string;
  memoryMiB: number;
  driver: string;
}

export interface PythonInfo {
  executable: string;
  python: string;
  torch: string | null;
  cuda: string | null;
  /** The interpreter's own folders (prefixes, site-packages, the real executable's folder), for the sandbox. */
  prefixes: string[];
}

/** The interpreter for `{python}`: the flag, `$PROBEGATE_PYTHON`, Debian's /usr/bin/python3, else python3 on PATH. */
export function choosePython(flag?: string): string {
  if (flag) return flag;
  if (process.env.PROBEGATE_PYTHON) return process.env.PROBEGATE_PYTHON;
  return existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

// Reads torch's version.py instead of importing torch: an import costs seconds per evaluation.
const PY_PROBE = `
import importlib.util, json, os, site, sys
dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
dirs.update(getattr(site, "getsitepackages", lambda: [])())
info = {"python": sys.version.split()[0], "torch": None, "cuda": None,
        "prefixes": sorted(os.path.realpath(d) for d in dirs if d and os.path.isdir(d))}
spec = importlib.util.find_spec("torch")
if spec and spec.origin:
    ns = {}
    try:
        with open(os.path.join(os.path.dirname(spec.origin), "version.py")) as f:
            exec(f.read(), ns)
        info["torch"] = ns.get("__version__")
        info["cuda"] = ns.get("cuda")
    except OSError:
        pass
print(json.dumps(info))
`;

const pythonCache = new Map<string, Promise<PythonInfo>>();

/** Version facts of the interpreter (cached per process: the demo evaluates many submissions). */
export function inspectPython(executable: string): Promise<PythonInfo> {
  let p = pythonCache.get(executable);
  if (!p) {
    p = (async () => {
      const r = await execa(executable, ["-c", PY_PROBE], { reject: false, timeout: 120_000 });
      if (r.exitCode !== 0) {
        const why = r.code === "ENOENT" ? "not found" : `exit ${r.exitCode}: ${String(r.stderr).trim().split("\n").pop()}`;
        throw new HarnessError(`the Python interpreter '${executable}' does not run (${why}); set --python or PROBEGATE_PYTHON`, "environment");
      }
      const info = JSON.parse(String(r.stdout).trim().split("\n").pop() ?? "{}") as Omit<PythonInfo, "executable">;
      return { executable, ...info, prefixes: info.prefixes ?? [] };
    })();
    pythonCache.set(executable, p);
    p.catch(() => pythonCache.delete(executable));
  }
  return p;
}

/** GPUs nvidia-smi reports (PROBEGATE_NVIDIA_SMI names another); none where there is no NVIDIA driver. */
export async function detectGpus(): Promise<GpuInfo[]> {
  const r = await execa(nvidiaSmiPath(), ["--query-gpu=index,name,memory.total,driver_version", "--format=csv,noheader,nounits"], {
    reject: false,
    timeout: 30_000,
  });
  if (r.exitCode !== 0 || typeof r.stdout !== "string") return [];
  return r.stdout
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [index, model, mem, driver] = line.split(",").map((s) => s.trim());
      return { index: Number(index), model: model ?? "unknown", memoryMiB: Number(mem), driver: driver ?? "unknown" };
    });
}

export function cpuCount(): number {
  return Math.max(1, cpus().length);
}

/**
 * The CPU ids this process may run on (its affinity, as /proc/self/status lists it), so packed
 * jobs are pinned only to cores that exist here; 0..n-1 where that file cannot be read.
 */
export function availableCpus(): number[] {
  try {
    const m = /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync("/proc/self/status", "utf8"));
    const ids = m?.[1] ? parseIdList(m[1]) : null;
    if (ids?.length) return ids;
  } catch {
    // not Linux, or no /proc
  }
  return Array.from({ length: cpuCount() }, (_, i) => i);
}
