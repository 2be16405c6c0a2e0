import { uidsMapped } from "../sandbox/uid-map.js";
import type { DoctorFacts } from "./facts.js";

/** `fail`: an evaluation cannot be sandboxed here as it should; `warn`: it can, with less than it should have. */
export type CheckStatus = "ok" | "warn" | "fail";

/** One finding of `probegate doctor`: what was checked, what was found, and the fix when it is not ok. */
export interface CheckResult {
  id: string;
  title: string;
  status: CheckStatus;
  found: string;
  /** What to do; null when ok. */
  fix: string | null;
}

const ok = (id: string, title: string, found: string): CheckResult => ({ id, title, status: "ok", found, fix: null });
const bad = (status: "warn" | "fail", id: string, title: string, found: string, fix: string): CheckResult => ({ id, title, status, found, fix });

/** Free disk below which a run cannot get its default 4 GiB (fail), and below which a few evaluations will not fit (warn). */
export const DISK_FAIL_BYTES = 4 * 1024 ** 3;
export const DISK_WARN_BYTES = 20 * 1024 ** 3;

const GIB = 1024 ** 3;

/** bubblewrap, setpriv and prlimit: the sandbox's programs. */
export function checkPrograms(f: DoctorFacts): CheckResult {
  const missing = [f.bwrap.version === null && `bubblewrap (${f.bwrap.path})`, !f.setpriv && "setpriv", !f.prlimit && "prlimit"].filter(Boolean);
  if (missing.length === 0) return ok("programs", "bubblewrap, setpriv, prlimit", `${f.bwrap.version} (${f.bwrap.path}), setpriv, prlimit`);
  return bad("fail", "programs", "bubblewrap, setpriv, prlimit", `missing: ${missing.join(", ")}`, "apt-get install -y bubblewrap util-linux (Debian/Ubuntu; dnf install bubblewrap util-linux elsewhere), or set PROBEGATE_BWRAP to a bubblewrap binary");
}

/** Unprivileged user namespaces: bubblewrap runs unprivileged (after setpriv, or as the runner user) and needs them. */
export function checkUserNamespaces(f: DoctorFacts): CheckResult {
  const t = "unprivileged user namespaces";
  const s = f.sysctl;
  const trialOk = f.sandboxTrial?.ok === true;
  if (s.maxUserNamespaces === 0) return bad("fail", "userns", t, "user.max_user_namespaces = 0", "sysctl -w user.max_user_namespaces=15000 (on the node; persist it in /etc/sysctl.d/)");
  if (s.unprivilegedUsernsClone === 0) return bad("fail", "userns", t, "kernel.unprivileged_userns_clone = 0", "sysctl -w kernel.unprivileged_userns_clone=1 (on the node; persist it in /etc/sysctl.d/)");
  if (s.apparmorRestrictUnprivilegedUserns === 1 && !trialOk) {
    return bad("fail", "userns", t, "kernel.apparmor_restrict_unprivileged_userns = 1 (Ubuntu 23.10+) and the sandbox trial failed", "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 on the node, or load an AppArmor profile for bwrap that allows userns (Ubuntu ships /etc/apparmor.d/bwrap-userns-restrict)");
  }
  const found = [`user.max_user_namespaces = ${s.maxUserNamespaces ?? "n/a"}`, s.unprivilegedUsernsClone !== null && `kernel.unprivileged_userns_clone = ${s.unprivilegedUsernsClone}`, s.apparmorRestrictUnprivilegedUserns !== null && `kernel.apparmor_restrict_unprivileged_userns = ${s.apparmorRestrictUnprivilegedUserns}`].filter(Boolean).join(", ");
  return ok("userns", t, found);
}

/** A /proc the kernel lets a user namespace mount afresh: none of its paths masked by the container runtime. */
export function checkProc(f: DoctorFacts): CheckResult {
  const t = "/proc not masked";
  if (f.procSubmounts.length === 0) return ok("proc", t, "no mounts over /proc paths");
  const shown = f.procSubmounts.slice(0, 4).join(", ") + (f.procSubmounts.length > 4 ? `, … (${f.procSubmounts.length} in all)` : "");
  return bad(
    "fail",
    "proc",
    t,
    `masked by the container runtime: ${shown}; the kernel refuses the sandbox a fresh /proc`,
    "Kubernetes: securityContext.procMount: Unmasked with hostUsers: false (docs/arc.md), or a privileged runner container; Docker: --security-opt systempaths=unconfined",
  );
}

/** The uids evaluations run as (root only): they must exist in this user namespace. */
export function checkUidRange(f: DoctorFacts): CheckResult {
  const t = "evaluation uids";
  const { first, count } = f.uidRange;
  const last = first + count - 1;
  if (f.uid !== 0) return bad("warn", "uids", t, `runs as uid ${f.uid}, not root: every evaluation runs as this uid (no uid of its own, no RLIMIT_NPROC per evaluation)`, "fine for an ephemeral runner that runs one evaluation at a time; run as root for a uid per evaluation");
  if (!f.uidMap) return ok("uids", t, `uids ${first}–${last} (no uid_map to check)`);
  if (uidsMapped(f.uidMap, first, count)) return ok("uids", t, `uids ${first}–${last} are mapped`);
  const map = f.uidMap.map((r) => `${r.inside}–${r.inside + r.count - 1}`).join(", ");
  return bad("fail", "uids", t, `uids ${first}–${last} are not in this user namespace (uid_map: ${map}); setpriv cannot switch to them`, "a pod with hostUsers: false maps only uids 0–65535: run the runner container as a non-root user there (docs/arc.md), or as root in a pod whose user namespace maps these uids");
}

/** The decisive one: the sandbox, as an evaluation runs it, runs `true`. */
export function checkSandboxTrial(f: DoctorFacts): CheckResult {
  const t = "sandbox trial run";
  if (!f.sandboxTrial) return bad("fail", "trial", t, "not run: the sandbox's programs are missing", "install them (see the first check)");
  if (f.sandboxTrial.ok) return ok("trial", t, `bwrap ran \`true\` with no network, a fresh /proc${f.uid === 0 ? `, as uid ${f.uidRange.first + f.uidRange.count - 1}` : ""}${f.gpus.nodes.length ? ", with the GPUs' device nodes" : ""}`);
  return bad("fail", "trial", t, f.sandboxTrial.why, "fix what the checks above report; the message is bubblewrap's (or setpriv's) own");
}

/** cgroups the engine can make per-run groups in; without them limits are sampled from /proc. */
export function checkCgroups(f: DoctorFacts): CheckResult {
  const t = "cgroup memory and pids";
  const c = f.cgroup.controllers;
  if (c?.version === 2) return ok("cgroup", t, `cgroup v2 at ${c.parent}, memory and pids delegated`);
  if (c?.version === 1) return ok("cgroup", t, `cgroup v1 memory (${c.memory}) and pids (${c.pids}) writable`);
  const missing = ["memory", "pids"].filter((x) => !f.cgroup.v2Delegated.includes(x));
  const found = f.cgroup.v2Path
    ? `cgroup v2 at ${f.cgroup.v2Path}: ${missing.length ? `${missing.join(" and ")} not in cgroup.subtree_control (has: ${f.cgroup.v2Delegated.join(" ") || "nothing"})` : "not writable by this user"}`
    : "no usable cgroup v2 or v1 memory and pids hierarchy";
  return bad(
    "warn",
    "cgroup",
    t,
    `${found}: memory and process limits are sampled from /proc every 100 ms (a fast fork or memory bomb can pass them between samples)`,
    "the engine makes each run's group under its own cgroup, and cgroup v2 lets a group hand memory and pids to children only while it holds no process itself (the root group excepted): run the engine in the root cgroup (a dedicated VM runner) or on a host with writable cgroup v1 memory and pids hierarchies; under Kubernetes the pod's own limits are the backstop",
  );
}

/** GPUs the driver shows, and the device node of each for the sandbox. */
export function checkGpus(f: DoctorFacts): CheckResult {
  const t = "GPUs and device nodes";
  const g = f.gpus;
  if (g.expected !== null && g.visible.length < g.expected) {
    return bad("fail", "gpus", t, `${g.visible.length} GPU(s) visible (nvidia-smi), ${g.expected} expected`, "give the runner pod its GPUs (resources.limits nvidia.com/gpu) and the NVIDIA container toolkit; check nvidia-smi in the pod");
  }
  if (g.visible.length === 0) return bad("warn", "gpus", t, "no GPU visible (nvidia-smi absent or lists none): only CPU tasks run here", "on a GPU runner: install the NVIDIA driver and container toolkit; pass --gpus N to require N");
  if (g.missingNodes.length) return bad("fail", "gpus", t, g.missingNodes.join("; "), "give the container each visible GPU's /dev/nvidiaN (by its minor number) plus /dev/nvidiactl and /dev/nvidia-uvm (NVIDIA container toolkit: NVIDIA_VISIBLE_DEVICES), or leave the GPU out with --gpus");
  if (!g.controlDevices.includes("/dev/nvidiactl") || !g.controlDevices.includes("/dev/nvidia-uvm")) {
    return bad("fail", "gpus", t, `control devices present: ${g.controlDevices.join(", ") || "none"}; CUDA needs /dev/nvidiactl and /dev/nvidia-uvm`, "load nvidia-uvm on the node (modprobe nvidia-uvm) and let the container toolkit pass the control devices");
  }
  const nodes = g.nodes.map((n) => `${n.index}→/dev/nvidia${n.minor}`).join(", ");
  return ok("gpus", t, `${g.visible.length} × ${g.visible[0]?.model}; ${nodes}`);
}

/** torch, CUDA and NCCL in the interpreter task commands run with. */
export function checkTorch(f: DoctorFacts): CheckResult {
  const t = "torch / CUDA / NCCL";
  const p = f.python;
  if (p.version === null) return bad("fail", "torch", t, `${p.executable}: ${p.error}`, "install Python (apt-get install -y python3) or pass --python / set PROBEGATE_PYTHON");
  if (p.torch === null) return bad("warn", "torch", t, `${p.executable} (Python ${p.version}) has no torch${p.error ? ` (${p.error})` : ""}`, "fine when every task brings its environment (environment.lock, built with uv); otherwise install torch into it");
  const gpus = f.gpus.visible.length;
  const found = `${p.executable}: Python ${p.version}, torch ${p.torch}, CUDA ${p.cuda ?? "none"}, ${p.cudaAvailable ? `${p.cudaDevices} CUDA device(s)` : "CUDA not available"}, NCCL ${p.nccl ?? "none"}`;
  if (gpus > 0 && !p.cudaAvailable) return bad("fail", "torch", t, found, "install a CUDA build of torch matching the driver (pip install torch from the CUDA index), or give tasks a locked environment that has one");
  if (gpus > 0 && p.nccl === null) return bad("warn", "torch", t, found, "multi-GPU tasks need NCCL: use a torch build with NCCL (every Linux CUDA wheel from PyPI has it)");
  return ok("torch", t, found);
}

/** uv, which builds each task's locked environment. */
export function checkUv(f: DoctorFacts): CheckResult {
  if (f.uv.version) return ok("uv", "uv (task environments)", f.uv.version);
  return bad("warn", "uv", "uv (task environments)", "uv not on PATH: tasks with environment.lock cannot be set up", "install uv (pip install uv==0.13.8, or its standalone installer) into the runner image");
}

/** Free disk where evaluations write. */
export function checkDisk(f: DoctorFacts): CheckResult {
  const t = "free disk";
  const free = f.disk.freeBytes;
  if (free === null) return bad("fail", "disk", t, `${f.disk.path} cannot be read`, "set TMPDIR to a folder on a local disk that exists");
  const found = `${(free / GIB).toFixed(1)} GiB free in ${f.disk.path}`;
  if (free < DISK_FAIL_BYTES) return bad("fail", "disk", t, `${found}; a run may write 4 GiB`, "give the runner more ephemeral storage (ARC: a larger emptyDir or ephemeral-storage request) or point TMPDIR at a larger disk");
  if (free < DISK_WARN_BYTES) return bad("warn", "disk", t, `${found}; a few evaluations side by side need ~20 GiB`, "give the runner more ephemeral storage, or run one evaluation at a time (--jobs 1)");
  return ok("disk", t, found);
}

/** Every check, in the order they are printed. */
export const CHECKS: ReadonlyArray<(f: DoctorFacts) => CheckResult> = [checkPrograms, checkUserNamespaces, checkProc, checkUidRange, checkSandboxTrial, checkCgroups, checkGpus, checkTorch, checkUv, checkDisk];

/** Runs every check; `sandboxable` is true when none failed (the exit code of `probegate doctor`). */
export function runChecks(f: DoctorFacts): { checks: CheckResult[]; sandboxable: boolean } {
  const checks = CHECKS.map((c) => c(f));
  return { checks, sandboxable: checks.every((c) => c.status !== "fail") };
}
