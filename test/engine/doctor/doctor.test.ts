import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { doctorCommand } from "../../../src/cli/doctor-command.js";
import { CHECKS, runChecks, type CheckResult } from "../../../src/engine/doctor/checks.js";
import { procSubmounts, type DoctorFacts } from "../../../src/engine/doctor/facts.js";
import { parseUidMap, uidsMapped } from "../../../src/engine/sandbox/uid-map.js";
import { cli } from "../../cli/run-cli.js";
import { tmp } from "../../helpers.js";

const GIB = 1024 ** 3;

/** The facts of a good 2-GPU runner (root, cgroup v2 delegated, device nodes by minor number). */
function goodFacts(): DoctorFacts {
  return {
    uid: 0,
    bwrap: { path: "bwrap", version: "bubblewrap 0.8.0" },
    setpriv: true,
    prlimit: true,
    sysctl: { maxUserNamespaces: 63000, unprivilegedUsernsClone: null, apparmorRestrictUnprivilegedUserns: null },
    procSubmounts: [],
    sandboxTrial: { ok: true },
    uidMap: [{ inside: 0, outside: 0, count: 4294967295 }],
    uidRange: { first: 1_000_000_000, count: 4096 },
    cgroup: { controllers: { version: 2, parent: "/sys/fs/cgroup/runner" }, v2Path: "/sys/fs/cgroup/runner", v2Controllers: ["cpu", "memory", "pids"], v2Delegated: ["memory", "pids"] },
    gpus: {
      visible: [
        { index: 0, model: "NVIDIA H200" },
        { index: 1, model: "NVIDIA H200" },
      ],
      nodes: [
        { index: 0, busId: "0000:9a:00.0", minor: 4, source: "proc" },
        { index: 1, busId: "0000:ab:00.0", minor: 5, source: "proc" },
      ],
      missingNodes: [],
      controlDevices: ["/dev/nvidia-uvm", "/dev/nvidiactl"],
      expected: 2,
    },
    python: { executable: "/usr/bin/python3", version: "3.12.3", torch: "2.15.0", cuda: "13.0", cudaAvailable: true, cudaDevices: 2, nccl: "2.28.3", error: null },
    uv: { version: "uv 0.13.8" },
    disk: { path: "/tmp", freeBytes: 200 * GIB },
  };
}

const byId = (f: DoctorFacts, id: string): CheckResult => {
  const c = runChecks(f).checks.find((x) => x.id === id);
  if (!c) throw new Error(`no check ${id}`);
  return c;
};

describe("probegate doctor's checks, each a function of the facts", () => {
  it("passes a good GPU runner with nothing to fix", () => {
    const { checks, sandboxable } = runChecks(goodFacts());
    expect(sandboxable).toBe(true);
    expect(checks.map((c) => [c.id, c.status, c.fix])).toEqual(CHECKS.map((_, i) => [checks[i]?.id, "ok", null]));
    expect(byId(goodFacts(), "gpus").found).toBe("2 × NVIDIA H200; 0→/dev/nvidia4, 1→/dev/nvidia5");
  });

  const cases: Array<[string, string, (f: DoctorFacts) => void, "fail" | "warn", string]> = [
    ["bubblewrap missing", "programs", (f) => (f.bwrap.version = null), "fail", "apt-get install -y bubblewrap util-linux (Debian/Ubuntu; dnf install bubblewrap util-linux elsewhere), or set PROBEGATE_BWRAP to a bubblewrap binary"],
    ["user namespaces off", "userns", (f) => (f.sysctl.maxUserNamespaces = 0), "fail", "sysctl -w user.max_user_namespaces=15000 (on the node; persist it in /etc/sysctl.d/)"],
    ["Debian's unprivileged_userns_clone off", "userns", (f) => (f.sysctl.unprivilegedUsernsClone = 0), "fail", "sysctl -w kernel.unprivileged_userns_clone=1 (on the node; persist it in /etc/sysctl.d/)"],
    [
      "Ubuntu's AppArmor restriction, and the trial failed",
      "userns",
      (f) => {
        f.sysctl.apparmorRestrictUnprivilegedUserns = 1;
        f.sandboxTrial = { ok: false, why: "bwrap: setting up uid map: Permission denied" };
      },
      "fail",
      "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 on the node, or load an AppArmor profile for bwrap that allows userns (Ubuntu ships /etc/apparmor.d/bwrap-userns-restrict)",
    ],
    ["/proc masked by the runtime", "proc", (f) => (f.procSubmounts = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", "/proc/kcore"]), "fail", "Kubernetes: securityContext.procMount: Unmasked with hostUsers: false (docs/arc.md), or a privileged runner container; Docker: --security-opt systempaths=unconfined"],
    ["root in a pod with hostUsers: false", "uids", (f) => (f.uidMap = [{ inside: 0, outside: 1_879_048_192, count: 65536 }]), "fail", "a pod with hostUsers: false maps only uids 0–65535: run the runner container as a non-root user there (docs/arc.md), or as root in a pod whose user namespace maps these uids"],
    ["not root", "uids", (f) => (f.uid = 1001), "warn", "fine for an ephemeral runner that runs one evaluation at a time; run as root for a uid per evaluation"],
    ["the trial fails", "trial", (f) => (f.sandboxTrial = { ok: false, why: "bwrap: Can't mount proc on /newroot/proc: Operation not permitted" }), "fail", "fix what the checks above report; the message is bubblewrap's (or setpriv's) own"],
    [
      "no cgroup delegation",
      "cgroup",
      (f) => {
        f.cgroup = { controllers: null, v2Path: "/sys/fs/cgroup", v2Controllers: ["cpu", "io", "memory", "pids"], v2Delegated: ["cpu"] };
      },
      "warn",
      "the engine makes each run's group under its own cgroup, and cgroup v2 lets a group hand memory and pids to children only while it holds no process itself (the root group excepted): run the engine in the root cgroup (a dedicated VM runner) or on a host with writable cgroup v1 memory and pids hierarchies; under Kubernetes the pod's own limits are the backstop",
    ],
    ["fewer GPUs than expected", "gpus", (f) => (f.gpus.expected = 8), "fail", "give the runner pod its GPUs (resources.limits nvidia.com/gpu) and the NVIDIA container toolkit; check nvidia-smi in the pod"],
    ["a GPU without its device node", "gpus", (f) => (f.gpus.missingNodes = ["GPU 1 (PCI 0000:ab:00.0): its device node /dev/nvidia5 (minor number 5, from proc) does not exist"]), "fail", "give the container each visible GPU's /dev/nvidiaN (by its minor number) plus /dev/nvidiactl and /dev/nvidia-uvm (NVIDIA container toolkit: NVIDIA_VISIBLE_DEVICES), or leave the GPU out with --gpus"],
    ["no nvidia-uvm", "gpus", (f) => (f.gpus.controlDevices = ["/dev/nvidiactl"]), "fail", "load nvidia-uvm on the node (modprobe nvidia-uvm) and let the container toolkit pass the control devices"],
    [
      "no GPU at all",
      "gpus",
      (f) => {
        f.gpus = { ...f.gpus, visible: [], nodes: [], expected: null };
      },
      "warn",
      "on a GPU runner: install the NVIDIA driver and container toolkit; pass --gpus N to require N",
    ],
    ["a CPU torch on a GPU runner", "torch", (f) => (f.python = { ...f.python, cudaAvailable: false, cudaDevices: 0, cuda: null }), "fail", "install a CUDA build of torch matching the driver (pip install torch from the CUDA index), or give tasks a locked environment that has one"],
    ["no NCCL", "torch", (f) => (f.python.nccl = null), "warn", "multi-GPU tasks need NCCL: use a torch build with NCCL (every Linux CUDA wheel from PyPI has it)"],
    ["no torch", "torch", (f) => (f.python = { ...f.python, torch: null }), "warn", "fine when every task brings its environment (environment.lock, built with uv); otherwise install torch into it"],
    ["no interpreter", "torch", (f) => (f.python = { ...f.python, version: null, error: "not found" }), "fail", "install Python (apt-get install -y python3) or pass --python / set PROBEGATE_PYTHON"],
    ["no uv", "uv", (f) => (f.uv.version = null), "warn", "install uv (pip install uv==0.13.8, or its standalone installer) into the runner image"],
    ["a nearly full disk", "disk", (f) => (f.disk.freeBytes = 3 * GIB), "fail", "give the runner more ephemeral storage (ARC: a larger emptyDir or ephemeral-storage request) or point TMPDIR at a larger disk"],
    ["a small disk", "disk", (f) => (f.disk.freeBytes = 10 * GIB), "warn", "give the runner more ephemeral storage, or run one evaluation at a time (--jobs 1)"],
  ];

  it.each(cases)("%s: %s is %s with its fix", (_what, id, spoil, status, fix) => {
    const f = goodFacts();
    spoil(f);
    const c = byId(f, id);
    expect(c.status).toBe(status);
    expect(c.fix).toBe(fix);
    expect(runChecks(f).sandboxable).toBe(status !== "fail");
  });

  it("names what it found: the masked paths, the uid map, the missing node", () => {
    const f = goodFacts();
    f.procSubmounts = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", "/proc/kcore"];
    f.uidMap = [{ inside: 0, outside: 1_879_048_192, count: 65536 }];
    expect(byId(f, "proc").found).toBe("masked by the container runtime: /proc/bus, /proc/fs, /proc/irq, /proc/sys, … (6 in all); the kernel refuses the sandbox a fresh /proc");
    expect(byId(f, "uids").found).toBe("uids 1000000000–1000004095 are not in this user namespace (uid_map: 0–65535); setpriv cannot switch to them");
  });

  it("finds the runtime's masks in mountinfo, leaving binfmt_misc alone", () => {
    const mountinfo = [
      "22 27 0:21 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw",
      "23 22 0:22 / /proc/sys/fs/binfmt_misc rw,relatime - autofs systemd-1 rw",
      "611 600 0:60 /bus /proc/bus ro,nosuid,nodev,noexec,relatime - proc proc rw",
      "617 600 0:64 / /proc/kcore rw,nosuid - tmpfs tmpfs ro,size=0k",
    ].join("\n");
    expect(procSubmounts(mountinfo)).toEqual(["/proc/bus", "/proc/kcore"]);
  });

  it("reads uid maps: the host's full range, a pod's 65,536 uids, adjoining ranges", () => {
    const host = parseUidMap("         0          0 4294967295\n");
    expect(uidsMapped(host, 1_000_000_000, 4096)).toBe(true);
    const pod = parseUidMap("         0 1879048192      65536\n");
    expect(uidsMapped(pod, 65534)).toBe(true);
    expect(uidsMapped(pod, 1_000_000_000)).toBe(false);
    const split = parseUidMap("1000 5000 24\n0 100 1000\n");
    expect(uidsMapped(split, 0, 1024)).toBe(true);
    expect(uidsMapped(split, 0, 1025)).toBe(false);
  });
});

describe("probegate doctor", () => {
  it("on this machine: can sandbox, table and JSON, exit 0", async () => {
    const r = await cli("doctor");
    expect(r.code, r.out + r.err).toBe(0);
    expect(r.out).toMatch(/ok +│ sandbox trial run/);
    expect(r.out).toContain("This runner can sandbox an evaluation");
    const j = await cli("doctor", "--json");
    const report = JSON.parse(j.out) as { sandboxable: boolean; checks: CheckResult[]; facts: DoctorFacts };
    expect(report.sandboxable).toBe(true);
    expect(report.checks.map((c) => c.id)).toEqual(["programs", "userns", "proc", "uids", "trial", "cgroup", "gpus", "torch", "uv", "disk"]);
    expect(report.checks.find((c) => c.id === "trial")?.status).toBe("ok");
    expect(report.facts.sandboxTrial).toEqual({ ok: true });
  }, 120_000);

  it("on this machine with no bubblewrap and a fake driver whose GPU has no device node: the real gatherer fails both rows, exit 1", async () => {
    const dir = tmp("pg-doctor-smi-");
    const smi = join(dir, "nvidia-smi");
    writeFileSync(
      smi,
      `#!/bin/bash
if [[ "$1" == --query-gpu=index,name* ]]; then echo "0, Fake H200, 143771, 580.95.05"; exit 0; fi
if [[ "$1" == --query-gpu=index,pci.bus_id ]]; then echo "0, 00000000:9A:00.0"; exit 0; fi
if [[ "$1" == -q ]]; then printf 'GPU 00000000:9A:00.0\n    Minor Number                          : 93\n'; exit 0; fi
exit 0
`,
    );
    chmodSync(smi, 0o755);
    const saved = { bwrap: process.env.PROBEGATE_BWRAP, smi: process.env.PROBEGATE_NVIDIA_SMI };
    process.env.PROBEGATE_BWRAP = join(dir, "no-bwrap");
    process.env.PROBEGATE_NVIDIA_SMI = smi;
    try {
      const j = await cli("doctor", "--json", "--gpus", "1");
      expect(j.code).toBe(1);
      const report = JSON.parse(j.out) as { sandboxable: boolean; checks: CheckResult[] };
      const row = (id: string) => report.checks.find((c) => c.id === id);
      expect(report.sandboxable).toBe(false);
      expect(row("programs")).toMatchObject({ status: "fail", found: `missing: bubblewrap (${join(dir, "no-bwrap")})` });
      expect(row("trial")).toMatchObject({ status: "fail", found: "not run: the sandbox's programs are missing" });
      expect(row("gpus")?.status).toBe("fail");
      expect(row("gpus")?.found).toContain("GPU 0 (PCI 0000:9a:00.0): its device node /dev/nvidia93 (minor number 93, from nvidia-smi -q) does not exist");
    } finally {
      for (const [k, v] of [["PROBEGATE_BWRAP", saved.bwrap], ["PROBEGATE_NVIDIA_SMI", saved.smi]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  }, 120_000);

  it("exits 1 with the FAIL rows when a check fails, and refuses a bad --gpus", async () => {
    let out = "";
    const io = { stdout: (s: string) => (out += s), stderr: () => {} };
    const code = await doctorCommand({}, io, async () => ({ ...goodFacts(), procSubmounts: ["/proc/kcore"], sandboxTrial: { ok: false, why: "bwrap: Can't mount proc on /newroot/proc: Operation not permitted" } }));
    expect(code).toBe(1);
    expect(out).toMatch(/FAIL +│ \/proc not masked/);
    expect(out).toContain("Can't mount proc on /newroot/proc");
    expect(out).toContain("This runner cannot sandbox an evaluation: fix the 2 FAIL row(s) above.");
    const bad = await cli("doctor", "--gpus", "eight");
    expect(bad.code).toBe(2);
    expect(bad.err).toContain("doctor: --gpus must be a number of GPUs this runner must have, like 8; got 'eight'.");
  });
});
