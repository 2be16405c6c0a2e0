export const id = 492;
export const ids = [492];
export const modules = {

/***/ 1492:
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {


// EXPORTS
__webpack_require__.d(__webpack_exports__, {
  doctorCommand: () => (/* binding */ doctorCommand)
});

// UNUSED EXPORTS: renderDoctorTable

// EXTERNAL MODULE: ./node_modules/cli-table3/index.js
var cli_table3 = __webpack_require__(5832);
var cli_table3_default = /*#__PURE__*/__webpack_require__.n(cli_table3);
// EXTERNAL MODULE: ./src/engine/sandbox/uid-map.ts
var uid_map = __webpack_require__(8755);
;// CONCATENATED MODULE: ./src/engine/doctor/checks.ts

const ok = (id, title, found) => ({ id, title, status: "ok", found, fix: null });
const bad = (status, id, title, found, fix) => ({ id, title, status, found, fix });
/** Free disk below which a run cannot get its default 4 GiB (fail), and below which a few evaluations will not fit (warn). */
const DISK_FAIL_BYTES = 4 * 1024 ** 3;
const DISK_WARN_BYTES = 20 * 1024 ** 3;
const GIB = 1024 ** 3;
/** bubblewrap, setpriv and prlimit: the sandbox's programs. */
function checkPrograms(f) {
    const missing = [f.bwrap.version === null && `bubblewrap (${f.bwrap.path})`, !f.setpriv && "setpriv", !f.prlimit && "prlimit"].filter(Boolean);
    if (missing.length === 0)
        return ok("programs", "bubblewrap, setpriv, prlimit", `${f.bwrap.version} (${f.bwrap.path}), setpriv, prlimit`);
    return bad("fail", "programs", "bubblewrap, setpriv, prlimit", `missing: ${missing.join(", ")}`, "apt-get install -y bubblewrap util-linux (Debian/Ubuntu; dnf install bubblewrap util-linux elsewhere), or set PROBEGATE_BWRAP to a bubblewrap binary");
}
/** Unprivileged user namespaces: bubblewrap runs unprivileged (after setpriv, or as the runner user) and needs them. */
function checkUserNamespaces(f) {
    const t = "unprivileged user namespaces";
    const s = f.sysctl;
    const trialOk = f.sandboxTrial?.ok === true;
    if (s.maxUserNamespaces === 0)
        return bad("fail", "userns", t, "user.max_user_namespaces = 0", "sysctl -w user.max_user_namespaces=15000 (on the node; persist it in /etc/sysctl.d/)");
    if (s.unprivilegedUsernsClone === 0)
        return bad("fail", "userns", t, "kernel.unprivileged_userns_clone = 0", "sysctl -w kernel.unprivileged_userns_clone=1 (on the node; persist it in /etc/sysctl.d/)");
    if (s.apparmorRestrictUnprivilegedUserns === 1 && !trialOk) {
        return bad("fail", "userns", t, "kernel.apparmor_restrict_unprivileged_userns = 1 (Ubuntu 23.10+) and the sandbox trial failed", "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 on the node, or load an AppArmor profile for bwrap that allows userns (Ubuntu ships /etc/apparmor.d/bwrap-userns-restrict)");
    }
    const found = [`user.max_user_namespaces = ${s.maxUserNamespaces ?? "n/a"}`, s.unprivilegedUsernsClone !== null && `kernel.unprivileged_userns_clone = ${s.unprivilegedUsernsClone}`, s.apparmorRestrictUnprivilegedUserns !== null && `kernel.apparmor_restrict_unprivileged_userns = ${s.apparmorRestrictUnprivilegedUserns}`].filter(Boolean).join(", ");
    return ok("userns", t, found);
}
/** A /proc the kernel lets a user namespace mount afresh: none of its paths masked by the container runtime. */
function checkProc(f) {
    const t = "/proc not masked";
    if (f.procSubmounts.length === 0)
        return ok("proc", t, "no mounts over /proc paths");
    const shown = f.procSubmounts.slice(0, 4).join(", ") + (f.procSubmounts.length > 4 ? `, … (${f.procSubmounts.length} in all)` : "");
    return bad("fail", "proc", t, `masked by the container runtime: ${shown}; the kernel refuses the sandbox a fresh /proc`, "Kubernetes: securityContext.procMount: Unmasked with hostUsers: false (docs/arc.md), or a privileged runner container; Docker: --security-opt systempaths=unconfined");
}
/** The uids evaluations run as (root only): they must exist in this user namespace. */
function checkUidRange(f) {
    const t = "evaluation uids";
    const { first, count } = f.uidRange;
    const last = first + count - 1;
    if (f.uid !== 0)
        return bad("warn", "uids", t, `runs as uid ${f.uid}, not root: every evaluation runs as this uid (no uid of its own, no RLIMIT_NPROC per evaluation)`, "fine for an ephemeral runner that runs one evaluation at a time; run as root for a uid per evaluation");
    if (!f.uidMap)
        return ok("uids", t, `uids ${first}–${last} (no uid_map to check)`);
    if ((0,uid_map/* uidsMapped */.Lt)(f.uidMap, first, count))
        return ok("uids", t, `uids ${first}–${last} are mapped`);
    const map = f.uidMap.map((r) => `${r.inside}–${r.inside + r.count - 1}`).join(", ");
    return bad("fail", "uids", t, `uids ${first}–${last} are not in this user namespace (uid_map: ${map}); setpriv cannot switch to them`, "a pod with hostUsers: false maps only uids 0–65535: run the runner container as a non-root user there (docs/arc.md), or as root in a pod whose user namespace maps these uids");
}
/** The decisive one: the sandbox, as an evaluation runs it, runs `true`. */
function checkSandboxTrial(f) {
    const t = "sandbox trial run";
    if (!f.sandboxTrial)
        return bad("fail", "trial", t, "not run: the sandbox's programs are missing", "install them (see the first check)");
    if (f.sandboxTrial.ok)
        return ok("trial", t, `bwrap ran \`true\` with no network, a fresh /proc${f.uid === 0 ? `, as uid ${f.uidRange.first + f.uidRange.count - 1}` : ""}${f.gpus.nodes.length ? ", with the GPUs' device nodes" : ""}`);
    return bad("fail", "trial", t, f.sandboxTrial.why, "fix what the checks above report; the message is bubblewrap's (or setpriv's) own");
}
/** cgroups the engine can make per-run groups in; without them limits are sampled from /proc. */
function checkCgroups(f) {
    const t = "cgroup memory and pids";
    const c = f.cgroup.controllers;
    if (c?.version === 2)
        return ok("cgroup", t, `cgroup v2 at ${c.parent}, memory and pids delegated`);
    if (c?.version === 1)
        return ok("cgroup", t, `cgroup v1 memory (${c.memory}) and pids (${c.pids}) writable`);
    const missing = ["memory", "pids"].filter((x) => !f.cgroup.v2Delegated.includes(x));
    const found = f.cgroup.v2Path
        ? `cgroup v2 at ${f.cgroup.v2Path}: ${missing.length ? `${missing.join(" and ")} not in cgroup.subtree_control (has: ${f.cgroup.v2Delegated.join(" ") || "nothing"})` : "not writable by this user"}`
        : "no usable cgroup v2 or v1 memory and pids hierarchy";
    return bad("warn", "cgroup", t, `${found}: memory and process limits are sampled from /proc every 100 ms (a fast fork or memory bomb can pass them between samples)`, "the engine makes each run's group under its own cgroup, and cgroup v2 lets a group hand memory and pids to children only while it holds no process itself (the root group excepted): run the engine in the root cgroup (a dedicated VM runner) or on a host with writable cgroup v1 memory and pids hierarchies; under Kubernetes the pod's own limits are the backstop");
}
/** GPUs the driver shows, and the device node of each for the sandbox. */
function checkGpus(f) {
    const t = "GPUs and device nodes";
    const g = f.gpus;
    if (g.expected !== null && g.visible.length < g.expected) {
        return bad("fail", "gpus", t, `${g.visible.length} GPU(s) visible (nvidia-smi), ${g.expected} expected`, "give the runner pod its GPUs (resources.limits nvidia.com/gpu) and the NVIDIA container toolkit; check nvidia-smi in the pod");
    }
    if (g.visible.length === 0)
        return bad("warn", "gpus", t, "no GPU visible (nvidia-smi absent or lists none): only CPU tasks run here", "on a GPU runner: install the NVIDIA driver and container toolkit; pass --gpus N to require N");
    if (g.missingNodes.length)
        return bad("fail", "gpus", t, g.missingNodes.join("; "), "give the container each visible GPU's /dev/nvidiaN (by its minor number) plus /dev/nvidiactl and /dev/nvidia-uvm (NVIDIA container toolkit: NVIDIA_VISIBLE_DEVICES), or leave the GPU out with --gpus");
    if (!g.controlDevices.includes("/dev/nvidiactl") || !g.controlDevices.includes("/dev/nvidia-uvm")) {
        return bad("fail", "gpus", t, `control devices present: ${g.controlDevices.join(", ") || "none"}; CUDA needs /dev/nvidiactl and /dev/nvidia-uvm`, "load nvidia-uvm on the node (modprobe nvidia-uvm) and let the container toolkit pass the control devices");
    }
    const nodes = g.nodes.map((n) => `${n.index}→/dev/nvidia${n.minor}`).join(", ");
    return ok("gpus", t, `${g.visible.length} × ${g.visible[0]?.model}; ${nodes}`);
}
/** torch, CUDA and NCCL in the interpreter task commands run with. */
function checkTorch(f) {
    const t = "torch / CUDA / NCCL";
    const p = f.python;
    if (p.version === null)
        return bad("fail", "torch", t, `${p.executable}: ${p.error}`, "install Python (apt-get install -y python3) or pass --python / set PROBEGATE_PYTHON");
    if (p.torch === null)
        return bad("warn", "torch", t, `${p.executable} (Python ${p.version}) has no torch${p.error ? ` (${p.error})` : ""}`, "fine when every task brings its environment (environment.lock, built with uv); otherwise install torch into it");
    const gpus = f.gpus.visible.length;
    const found = `${p.executable}: Python ${p.version}, torch ${p.torch}, CUDA ${p.cuda ?? "none"}, ${p.cudaAvailable ? `${p.cudaDevices} CUDA device(s)` : "CUDA not available"}, NCCL ${p.nccl ?? "none"}`;
    if (gpus > 0 && !p.cudaAvailable)
        return bad("fail", "torch", t, found, "install a CUDA build of torch matching the driver (pip install torch from the CUDA index), or give tasks a locked environment that has one");
    if (gpus > 0 && p.nccl === null)
        return bad("warn", "torch", t, found, "multi-GPU tasks need NCCL: use a torch build with NCCL (every Linux CUDA wheel from PyPI has it)");
    return ok("torch", t, found);
}
/** uv, which builds each task's locked environment. */
function checkUv(f) {
    if (f.uv.version)
        return ok("uv", "uv (task environments)", f.uv.version);
    return bad("warn", "uv", "uv (task environments)", "uv not on PATH: tasks with environment.lock cannot be set up", "install uv (pip install uv==0.13.8, or its standalone installer) into the runner image");
}
/** Free disk where evaluations write. */
function checkDisk(f) {
    const t = "free disk";
    const free = f.disk.freeBytes;
    if (free === null)
        return bad("fail", "disk", t, `${f.disk.path} cannot be read`, "set TMPDIR to a folder on a local disk that exists");
    const found = `${(free / GIB).toFixed(1)} GiB free in ${f.disk.path}`;
    if (free < DISK_FAIL_BYTES)
        return bad("fail", "disk", t, `${found}; a run may write 4 GiB`, "give the runner more ephemeral storage (ARC: a larger emptyDir or ephemeral-storage request) or point TMPDIR at a larger disk");
    if (free < DISK_WARN_BYTES)
        return bad("warn", "disk", t, `${found}; a few evaluations side by side need ~20 GiB`, "give the runner more ephemeral storage, or run one evaluation at a time (--jobs 1)");
    return ok("disk", t, found);
}
/** Every check, in the order they are printed. */
const CHECKS = [checkPrograms, checkUserNamespaces, checkProc, checkUidRange, checkSandboxTrial, checkCgroups, checkGpus, checkTorch, checkUv, checkDisk];
/** Runs every check; `sandboxable` is true when none failed (the exit code of `probegate doctor`). */
function runChecks(f) {
    const checks = CHECKS.map((c) => c(f));
    return { checks, sandboxable: checks.every((c) => c.status !== "fail") };
}

// EXTERNAL MODULE: external "node:fs"
var external_node_fs_ = __webpack_require__(3024);
// EXTERNAL MODULE: external "node:os"
var external_node_os_ = __webpack_require__(8161);
// EXTERNAL MODULE: ./node_modules/execa/index.js + 139 modules
var execa = __webpack_require__(5172);
// EXTERNAL MODULE: ./src/engine/claims/runner-claims.ts
var runner_claims = __webpack_require__(7818);
// EXTERNAL MODULE: ./src/engine/host.ts
var host = __webpack_require__(6022);
// EXTERNAL MODULE: ./src/engine/sandbox/cgroup.ts
var cgroup = __webpack_require__(3680);
// EXTERNAL MODULE: ./src/engine/sandbox/gpu-devices.ts
var gpu_devices = __webpack_require__(710);
// EXTERNAL MODULE: ./src/engine/sandbox/sandbox.ts
var sandbox = __webpack_require__(8865);
;// CONCATENATED MODULE: ./src/engine/doctor/facts.ts










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
const readNumber = (file) => {
    try {
        const v = Number((0,external_node_fs_.readFileSync)(file, "utf8").trim());
        return Number.isFinite(v) ? v : null;
    }
    catch {
        return null;
    }
};
const onPath = async (cmd, args) => {
    const r = await (0,execa/* execa */.Ho)(cmd, args, { reject: false, timeout: 30_000 });
    return r.exitCode === 0 ? String(r.stdout || r.stderr).trim().split("\n")[0] ?? "" : null;
};
/** Mount points strictly inside /proc, from /proc/self/mountinfo (binfmt_misc, an empty folder, is allowed by the kernel). */
function procSubmounts(mountinfo) {
    return mountinfo
        .split("\n")
        .map((l) => l.split(" ")[4] ?? "")
        .filter((p) => p.startsWith("/proc/") && p !== "/proc/sys/fs/binfmt_misc");
}
async function pythonFacts(executable) {
    const none = { executable, version: null, torch: null, cuda: null, cudaAvailable: false, cudaDevices: 0, nccl: null };
    const r = await (0,execa/* execa */.Ho)(executable, ["-c", PY_DOCTOR], { reject: false, timeout: 180_000 });
    if (r.exitCode !== 0)
        return { ...none, error: r.code === "ENOENT" ? "not found" : `exit ${r.exitCode}: ${String(r.stderr).trim().split("\n").pop()}` };
    try {
        return { executable, ...JSON.parse(String(r.stdout).trim().split("\n").pop() ?? "") };
    }
    catch {
        return { ...none, error: `printed no facts: ${String(r.stdout).slice(0, 200)}` };
    }
}
/** Runs `true` in the sandbox as an evaluation would, with `devices` bound. */
async function sandboxTrial(bwrap, dropToUid, devices) {
    const spec = { bwrap, ...(0,sandbox/* systemLayout */.eJ)(), readWrite: [], readOnlyInside: [], devices, tmpBytes: 1024 * 1024, cwd: "/", dropToUid, maxProcesses: dropToUid === null ? null : 64, maxFileBytes: 1024 * 1024 };
    const argv = (0,sandbox/* sandboxArgv */.aP)(spec, ["true"]);
    const r = await (0,execa/* execa */.Ho)(argv[0], argv.slice(1), { reject: false, timeout: 30_000, stdin: "ignore", env: { PATH: "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" } });
    if (r.exitCode === 0)
        return { ok: true };
    return { ok: false, why: String(r.stderr || r.shortMessage).trim().split("\n").slice(-2).join("; ") };
}
/** Gathers the facts of this runner. The only I/O of `probegate doctor`; the checks judge what it returns. */
async function gatherDoctorFacts(opts = {}) {
    const uid = typeof process.getuid === "function" ? process.getuid() : -1;
    const bwrap = (0,sandbox/* bwrapPath */.Sj)();
    const [bwrapVersion, setpriv, prlimit, uvVersion, gpus, python] = await Promise.all([
        onPath(bwrap, ["--version"]),
        onPath("setpriv", ["--version"]),
        onPath("prlimit", ["--version"]),
        onPath("uv", ["--version"]),
        (0,host/* detectGpus */.RK)(),
        pythonFacts((0,host/* choosePython */.Ik)(opts.python)),
    ]);
    const nodes = gpus.length ? await (0,gpu_devices/* readGpuNodes */.we)(gpus.map((g) => g.index)) : [];
    const resolved = (0,gpu_devices/* resolveGpuNodes */.qi)(nodes.map((n) => n.index), nodes);
    const control = (0,gpu_devices/* controlDevices */.Vc)();
    const uidRange = { first: (0,sandbox/* evaluationUid */.tH)(0), count: runner_claims/* UID_SLOTS */.ns };
    // The trial runs as the last uid of the range, so a range the namespace does not map fails here.
    const trial = bwrapVersion !== null && setpriv !== null && prlimit !== null ? await sandboxTrial(bwrap, uid === 0 ? uidRange.first + uidRange.count - 1 : null, [...resolved.devices, ...(resolved.devices.length ? control : [])]) : null;
    const selfCgroup = (() => {
        try {
            return (0,external_node_fs_.readFileSync)("/proc/self/cgroup", "utf8");
        }
        catch {
            return "";
        }
    })();
    const v2Own = (0,cgroup/* ownCgroupPath */.Yv)(selfCgroup, null);
    const v2Root = (0,external_node_fs_.existsSync)("/sys/fs/cgroup/cgroup.controllers") ? "/sys/fs/cgroup" : (0,external_node_fs_.existsSync)("/sys/fs/cgroup/unified/cgroup.controllers") ? "/sys/fs/cgroup/unified" : null;
    const v2Path = v2Root && v2Own !== null ? `${v2Root}${v2Own === "/" ? "" : v2Own}` : null;
    const words = (file) => {
        try {
            return (0,external_node_fs_.readFileSync)(file, "utf8").trim().split(/\s+/).filter(Boolean);
        }
        catch {
            return [];
        }
    };
    const diskPath = opts.diskPath ?? process.env.TMPDIR ?? (0,external_node_os_.tmpdir)();
    let freeBytes = null;
    try {
        const s = (0,external_node_fs_.statfsSync)(diskPath);
        freeBytes = s.bavail * s.bsize;
    }
    catch {
        freeBytes = null;
    }
    let mountinfo = "";
    try {
        mountinfo = (0,external_node_fs_.readFileSync)("/proc/self/mountinfo", "utf8");
    }
    catch {
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
        uidMap: (0,uid_map/* readUidMap */.Nw)(),
        uidRange,
        cgroup: { controllers: (0,cgroup/* findControllers */.FF)(), v2Path, v2Controllers: v2Path ? words(`${v2Path}/cgroup.controllers`) : [], v2Delegated: v2Path ? words(`${v2Path}/cgroup.subtree_control`) : [] },
        gpus: { visible: gpus.map((g) => ({ index: g.index, model: g.model })), nodes, missingNodes: resolved.missing.map((m) => m.why), controlDevices: control, expected: opts.expectGpus ?? null },
        python,
        uv: { version: uvVersion },
        disk: { path: diskPath, freeBytes },
    };
}

// EXTERNAL MODULE: ./src/engine/errors.ts
var errors = __webpack_require__(7679);
;// CONCATENATED MODULE: ./src/cli/doctor-command.ts




const MARK = { ok: "ok", warn: "WARN", fail: "FAIL" };
/** The checks as a table: status, what was checked, what was found, and the fix. */
function renderDoctorTable(checks, sandboxable) {
    const t = new (cli_table3_default())({ head: ["", "check", "found", "fix"], colWidths: [6, 24, 60, 60], wordWrap: true, style: { head: [], border: [] } });
    for (const c of checks)
        t.push([MARK[c.status], c.title, c.found, c.fix ?? ""]);
    const verdict = sandboxable
        ? `This runner can sandbox an evaluation${checks.some((c) => c.status === "warn") ? " (with the warnings above)" : ""}.`
        : `This runner cannot sandbox an evaluation: fix the ${checks.filter((c) => c.status === "fail").length} FAIL row(s) above.`;
    return `${t.toString()}\n${verdict}\n`;
}
/**
 * `probegate doctor`: gathers this runner's facts, judges them, prints a table (or JSON with
 * `--json`), and returns 0 only when an evaluation can be sandboxed here (no check failed), else 1.
 */
async function doctorCommand(flags, io, gather = gatherDoctorFacts) {
    let expectGpus = null;
    if (flags.gpus !== undefined) {
        if (!/^\d+$/.test(flags.gpus))
            throw new errors/* InputError */.d(`doctor: --gpus must be a number of GPUs this runner must have, like 8; got '${flags.gpus}'.`, { field: "--gpus" });
        expectGpus = Number(flags.gpus);
    }
    const facts = await gather({ python: flags.python, expectGpus, diskPath: flags.disk });
    const { checks, sandboxable } = runChecks(facts);
    if (flags.json || flags.format === "json")
        io.stdout(`${JSON.stringify({ sandboxable, checks, facts }, null, 2)}\n`);
    else
        io.stdout(renderDoctorTable(checks, sandboxable));
    return sandboxable ? 0 : 1;
}


/***/ })

};
