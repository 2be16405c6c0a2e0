import { existsSync, readFileSync, statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import { execa } from "execa";
import { UID_SLOTS } from "../claims/runner-claims.js";
import { choosePython } from "../host.js";
import { detectGpus } from "../host.js";
import { findControllers, ownCgroupPath, type CgroupControllers } from "../sandbox/cgroup.js";
import { controlDevices, readGpuNodes, resolveGpuNodes, type GpuNode } from "../sandbox/gpu-devices.js";
import { bwrapPath, evaluationUid, sandboxArgv, systemLayout, type SandboxSpec } from "../sandbox/sandbox.js";
import { readUidMap, type UidRange } from "../sandbox/uid-map.js";

/** What a trial run of a command said: it worked, or its last words. */
export type Trial = { ok: true } | { ok: false; why: string };

/** What `probegate doctor` knows about this runner; every check is a pure function of it. */
export interface DoctorFacts {
  /** The engine's uid: as root it drops each evaluation to a uid of its own (setpriv). */
  uid: number;
  bwrap: { path: string; version: string | null };
  setpriv: boolean;
  prlimit: boolean;
  /** The sysctls that switch unprivileged user namespaces off; null where the kernel has none. */
  sysctl: { maxUserNamespaces: number | null; unprivilegedUsernsClone: number | null; apparmorRestrictUnprivilegedUserns: number | null };
  /** Mounts over paths inside /proc (a container runtime's masks): the kernel then refuses a fresh procfs in a user namespace. */
  procSubmounts: string[];
  /** The sandbox as an evaluation runs it (no network, fresh /proc, as the top evaluation uid when root, with the GPUs' device nodes), running `true`. */
  sandboxTrial: Trial | null;
  uidMap: UidRange[] | null;
  /** The uids evaluations run as, when root. */
  uidRange: { first: number; count: number };
  cgroup: { controllers: CgroupControllers | null; v2Path: string | null; v2Controllers: string[]; v2Delegated: string[] };
  gpus: { visible: Array<{ index: number; model: string }>; nodes: GpuNode[]; missingNodes: string[]; controlDevices: string[]; expected: number | null };
  python: PythonFacts;
  uv: { version: string | null };
  disk: { path: string; freeBytes: number | null };
}

/** What the task interpreter has: torch, its CUDA, and NCCL. */
export interface PythonFacts {
  executable: string;
  version: string | null;
  torch: string | null;
  cuda: string | null;
  cudaAvailable: boolean;
  cudaDevices: number;
  nccl: string | null;
  /** Why the interpreter or torch could not be read (null: it could). */
  error: string | null;
}

const PY_DOCTOR = `
import json, sys
info = {"version": sys.version.split()[0], "torch": None, "cuda": None, "cudaAvailable": False, "cudaDevices": 0, "nccl": None, "error": None}
try:
    import torch
    info["torch"] = torch.__version__
    info["cuda"] = torch.version.cuda
    info["cudaAvailable"] = bool(torch.cuda.is_available())
    info["cudaDevices"] = torch.cuda.device_count() if info["cudaAvailable"] else 0
    import torch.distributed as dist
    if dist.is_available() and dist.is_nccl_available():
        v = torch.cuda.nccl.version()
        info["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
except Exception as e:
    info["error"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(info))
`;

const readNumber = (file: string): number | null => {
  try {
    const v = Number(readFileSync(file, "utf8").trim());
    return Number.isFinite(v) ? v : null;
  } catch {
    return null;
  }
};

const onPath = async (cmd: string, args: string[]): Promise<string | null> => {
  const r = await execa(cmd, args, { reject: false, timeout: 30_000 });
  return r.exitCode === 0 ? String(r.stdout || r.stderr).trim().split("\n")[0] ?? "" : null;
};

/** Mount points strictly inside /proc, from /proc/self/mountinfo (binfmt_misc, an empty folder, is allowed by the kernel). */
export function procSubmounts(mountinfo: string): string[] {
  return mountinfo
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((p) => p.startsWith("/proc/") && p !== "/proc/sys/fs/binfmt_misc");
}

async function pythonFacts(executable: string): Promise<PythonFacts> {
  const none = { executable, version: null, torch: null, cuda: null, cudaAvailable: false, cudaDevices: 0, nccl: null };
  const r = await execa(executable, ["-c", PY_DOCTOR], { reject: false, timeout: 180_000 });
  if (r.exitCode !== 0) return { ...none, error: r.code === "ENOENT" ? "not found" : `exit ${r.exitCode}: ${String(r.stderr).trim().split("\n").pop()}` };
  try {
    return { executable, ...(JSON.parse(String(r.stdout).trim().split("\n").pop() ?? "") as Omit<PythonFacts, "executable">) };
  } catch {
    return { ...none, error: `printed no facts: ${String(r.stdout).slice(0, 200)}` };
  }
}

/** Runs `true` in the sandbox as an evaluation would, with `devices` bound. */
async function sandboxTrial(bwrap: string, dropToUid: number | null, devices: string[]): Promise<Trial> {
  const spec: SandboxSpec = { bwrap, ...systemLayout(), readWrite: [], readOnlyInside: [], devices, tmpBytes: 1024 * 1024, cwd: "/", dropToUid, maxProcesses: dropToUid === null ? null : 64, maxFileBytes: 1024 * 1024 };
  const argv = sandboxArgv(spec, ["true"]);
  const r = await execa(argv[0] as string, argv.slice(1), { reject: false, timeout: 30_000, stdin: "ignore", env: { PATH: "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" } });
  if (r.exitCode === 0) return { ok: true };
  return { ok: false, why: String(r.stderr || r.shortMessage).trim().split("\n").slice(-2).join("; ") };
}

/** Gathers the facts of this runner. The only I/O of `probegate doctor`; the checks judge what it returns. */
export async function gatherDoctorFacts(opts: { python?: string; expectGpus?: number | null; diskPath?: string } = {}): Promise<DoctorFacts> {
  const uid = typeof process.getuid === "function" ? process.getuid() : -1;
  const bwrap = bwrapPath();
  const [bwrapVersion, setpriv, prlimit, uvVersion, gpus, python] = await Promise.all([
    onPath(bwrap, ["--version"]),
    onPath("setpriv", ["--version"]),
    onPath("prlimit", ["--version"]),
    onPath("uv", ["--version"]),
    detectGpus(),
    pythonFacts(choosePython(opts.python)),
  ]);
  const nodes = gpus.length ? await readGpuNodes(gpus.map((g) => g.index)) : [];
  const resolved = resolveGpuNodes(nodes.map((n) => n.index), nodes);
  const control = controlDevices();
  const uidRange = { first: evaluationUid(0), count: UID_SLOTS };
  // The trial runs as the last uid of the range, so a range the namespace does not map fails here.
  const trial = bwrapVersion !== null && setpriv !== null && prlimit !== null ? await sandboxTrial(bwrap, uid === 0 ? uidRange.first + uidRange.count - 1 : null, [...resolved.devices, ...(resolved.devices.length ? control : [])]) : null;
  const selfCgroup = (() => {
    try {
      return readFileSync("/proc/self/cgroup", "utf8");
    } catch {
      return "";
    }
  })();
  const v2Own = ownCgroupPath(selfCgroup, null);
  const v2Root = existsSync("/sys/fs/cgroup/cgroup.controllers") ? "/sys/fs/cgroup" : existsSync("/sys/fs/cgroup/unified/cgroup.controllers") ? "/sys/fs/cgroup/unified" : null;
  const v2Path = v2Root && v2Own !== null ? `${v2Root}${v2Own === "/" ? "" : v2Own}` : null;
  const words = (file: string) => {
    try {
      return readFileSync(file, "utf8").trim().split(/\s+/).filter(Boolean);
    } catch {
      return [];
    }
  };
  const diskPath = opts.diskPath ?? process.env.TMPDIR ?? tmpdir();
  let freeBytes: number | null = null;
  try {
    const s = statfsSync(diskPath);
    freeBytes = s.bavail * s.bsize;
  } catch {
    freeBytes = null;
  }
  let mountinfo = "";
  try {
    mountinfo = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    // Not Linux: no /proc at all, which the /proc check reports.
  }
  return {
    uid,
    bwrap: { path: bwrap, version: bwrapVersion },
    setpriv: setpriv !== null,
    prlimit: prlimit !== null,
    sysctl: {
      maxUserNamespaces: readNumber("/proc/sys/user/max_user_namespaces"),
      unprivilegedUsernsClone: readNumber("/proc/sys/kernel/unprivileged_userns_clone"),
      apparmorRestrictUnprivilegedUserns: readNumber("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
    },
    procSubmounts: mountinfo ? procSubmounts(mountinfo) : ["(no /proc/self/mountinfo)"],
    sandboxTrial: trial,
    uidMap: readUidMap(),
    uidRange,
    cgroup: { controllers: findControllers(), v2Path, v2Controllers: v2Path ? words(`${v2Path}/cgroup.controllers`) : [], v2Delegated: v2Path ? words(`${v2Path}/cgroup.subtree_control`) : [] },
    gpus: { visible: gpus.map((g) => ({ index: g.index, model: g.model })), nodes, missingNodes: resolved.missing.map((m) => m.why), controlDevices: control, expected: opts.expectGpus ?? null },
    python,
    uv: { version: uvVersion },
    disk: { path: diskPath, freeBytes },
  };
}
