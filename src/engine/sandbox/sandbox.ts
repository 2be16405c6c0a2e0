import { lstatSync, readlinkSync } from "node:fs";
import { execa } from "execa";
import { controlDevices, missingGpuError, resolveGpuNodes, type GpuNode } from "./gpu-devices.js";

/**
 * What one sandboxed command may see and use. Host paths keep their names inside, so the paths in
 * a JUnit report, a traceback or `$PROBEGATE_RESULTS` mean the same on both sides.
 */
export interface SandboxSpec {
  /** The bubblewrap executable. */
  bwrap: string;
  /** Host folders and files visible read-only (system folders, the interpreter, the probe kit, the probes). */
  readOnly: readonly string[];
  /** Host folders and files visible read-write (the workspace, HOME, one report or results file). */
  readWrite: readonly string[];
  /** Paths under a read-write folder that stay read-only (the workspace's .git). */
  readOnlyInside: readonly string[];
  /** Top-level symlinks of the host to recreate (`/bin` → `usr/bin` on merged-/usr systems). */
  symlinks: ReadonlyArray<{ path: string; target: string }>;
  /** Device nodes passed through (the job's /dev/nvidiaN and the NVIDIA control devices). */
  devices: readonly string[];
  /** Size of the private /tmp (a tmpfs). */
  tmpBytes: number;
  cwd: string;
  /** Drop to this user and group before entering (the engine runs as root); null: stay the caller. */
  dropToUid: number | null;
  /** RLIMIT_NPROC; only meaningful with a user of its own (it counts every process of the real uid). */
  maxProcesses: number | null;
  /** RLIMIT_FSIZE: the largest file a process may write. */
  maxFileBytes: number;
}

/**
 * The user of the engine's one trial run of the sandbox (`detectSandbox`) when it is root: `nobody`,
 * which owns nothing of the runner's. Evaluations themselves run as a uid of their own (`evaluationUid`).
 */
export const SANDBOX_UID = 65534;

/**
 * First of the uids evaluations run as, one per evaluation (its jobs share its workspace, so its
 * uid): RLIMIT_NPROC is per uid, so evaluations side by side under one uid (`nobody`) would share
 * one process budget — one submission's threads would starve another's (EAGAIN from
 * pthread_create) and a fork bomb would reach every evaluation on the runner. Far above any
 * account a distribution creates.
 */
export const JOB_UID_BASE = 1_000_000_000;

/**
 * The uid of the evaluation holding uid slot `slot`. Slots are claimed across the runner's probegate
 * processes (runner-claims.ts `claimEvaluationUid`), so no two running evaluations share a uid.
 */
export function evaluationUid(slot: number): number {
  return JOB_UID_BASE + slot;
}

/**
 * Top-level host folders a program needs to run; what is absent on a host is skipped. Not /opt,
 * /home or /root: runners keep their credentials there. An interpreter outside /usr is added on its own.
 */
const SYSTEM_PATHS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"];

/**
 * The command line that runs `command` in a sandbox: no network (own network namespace with only
 * loopback), own pid / ipc / uts namespaces, a private /tmp, a fresh /proc and a minimal /dev, and
 * nothing of the host's files but what `spec` names. As root it first becomes an unprivileged user
 * (setpriv), so the kernel sees a distinct uid for RLIMIT_NPROC and for file permissions. Pure.
 */
export function sandboxArgv(spec: SandboxSpec, command: readonly string[]): string[] {
  if (command.length === 0) throw new TypeError("empty command");
  const out: string[] = [];
  if (spec.dropToUid !== null) {
    const id = String(spec.dropToUid);
    out.push("setpriv", `--reuid=${id}`, `--regid=${id}`, "--clear-groups", "--inh-caps=-all", "--no-new-privs");
  }
  out.push("prlimit", `--fsize=${spec.maxFileBytes}`, "--core=0");
  if (spec.maxProcesses !== null) out.push(`--nproc=${spec.maxProcesses}`);
  out.push("--", spec.bwrap, "--unshare-user", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try");
  out.push("--hostname", "localhost", "--die-with-parent", "--disable-userns", "--cap-drop", "ALL");
  if (spec.dropToUid !== null) out.push("--uid", String(spec.dropToUid), "--gid", String(spec.dropToUid));
  for (const l of spec.symlinks) out.push("--symlink", l.target, l.path);
  out.push("--proc", "/proc", "--dev", "/dev");
  for (const d of spec.devices) out.push("--dev-bind", d, d);
  out.push("--size", String(spec.tmpBytes), "--tmpfs", "/tmp");
  // Binds after the /tmp tmpfs: the evaluation folder usually lives under the host's /tmp.
  for (const p of spec.readOnly) out.push("--ro-bind", p, p);
  for (const p of spec.readWrite) out.push("--bind", p, p);
  for (const p of spec.readOnlyInside) out.push("--ro-bind", p, p);
  out.push("--chdir", spec.cwd, "--", ...command);
  return out;
}

/** The host's system folders and top-level symlinks, as `sandboxArgv` wants them. */
export function systemLayout(): Pick<SandboxSpec, "readOnly" | "symlinks"> {
  const readOnly: string[] = [];
  const symlinks: Array<{ path: string; target: string }> = [];
  for (const p of SYSTEM_PATHS) {
    let st;
    try {
      st = lstatSync(p);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) symlinks.push({ path: p, target: readlinkSync(p) });
    else if (st.isDirectory()) readOnly.push(p);
  }
  return { readOnly, symlinks };
}

/**
 * The device nodes of the given GPUs (nvidia-smi indices), found through the driver's minor numbers
 * (`nodes`, gpu-devices.ts `readGpuNodes`), not the index: in a container the two differ. Plus the
 * control devices CUDA opens. A GPU whose node is unknown or missing is an error naming it, never
 * dropped: CUDA would fail in the sandbox and the submission would be blamed.
 */
export function gpuDevices(indices: readonly number[], nodes: readonly GpuNode[]): string[] {
  if (indices.length === 0) return [];
  const { devices, missing } = resolveGpuNodes(indices, nodes);
  if (missing.length) throw missingGpuError(missing);
  return [...devices, ...controlDevices()];
}

/** The bubblewrap executable: `$PROBEGATE_BWRAP`, else `bwrap` on PATH. */
export function bwrapPath(): string {
  return process.env.PROBEGATE_BWRAP || "bwrap";
}

/** Whether this machine can isolate submission code, and if not, why not. */
export type SandboxSupport = { ok: true; dropToUid: number | null } | { ok: false; why: string };

const support = new Map<string, Promise<SandboxSupport>>();

/**
 * Detects once per process (and bubblewrap path) whether the sandbox works here, by running `true`
 * in it: bubblewrap, setpriv and prlimit must be installed and user namespaces allowed.
 */
export function detectSandbox(bwrap = bwrapPath()): Promise<SandboxSupport> {
  const known = support.get(bwrap);
  if (known) return known;
  const trial = (async (): Promise<SandboxSupport> => {
    const root = typeof process.getuid === "function" && process.getuid() === 0;
    const spec: SandboxSpec = {
      bwrap,
      ...systemLayout(),
      readWrite: [],
      readOnlyInside: [],
      devices: [],
      tmpBytes: 1024 * 1024,
      cwd: "/",
      dropToUid: root ? SANDBOX_UID : null,
      maxProcesses: null,
      maxFileBytes: 1024 * 1024,
    };
    const argv = sandboxArgv(spec, ["true"]);
    const r = await execa(argv[0] as string, argv.slice(1), { reject: false, timeout: 30_000, stdin: "ignore", env: { PATH: "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" } });
    if (r.exitCode === 0) return { ok: true, dropToUid: spec.dropToUid };
    const said = String(r.stderr || r.shortMessage).trim().split("\n").slice(-2).join("; ");
    return { ok: false, why: `a trial run of \`${argv.join(" ")}\` failed (${said}); the sandbox needs bubblewrap (${bwrap}), util-linux (setpriv, prlimit) and user namespaces` };
  })();
  support.set(bwrap, trial);
  return trial;
}
