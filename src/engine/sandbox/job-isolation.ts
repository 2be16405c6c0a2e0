import { chmodSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { execa } from "execa";
import type { CgroupControllers } from "./cgroup.js";
import { HarnessError } from "../errors.js";
import type { RunIsolation } from "../run-command.js";
import { missingGpuError, resolveGpuNodes, type GpuNode } from "./gpu-devices.js";
import { readUidMap, uidsMapped } from "./uid-map.js";
import { gpuDevices, systemLayout, type SandboxSpec, type SandboxSupport } from "./sandbox.js";

/** How every run of one evaluation is isolated; made once per evaluation from what the machine offers. */
export interface IsolationPlan {
  /** Null: the operator chose to run unsandboxed (`--unsandboxed`). */
  sandbox: {
    bwrap: string;
    dropToUid: number | null;
    /** System folders and the interpreter's own folders, read-only. */
    readOnly: readonly string[];
    symlinks: SandboxSpec["symlinks"];
    /** The job's GPU device nodes. */
    devices: readonly string[];
  } | null;
  cgroups: CgroupControllers | null;
  /** Processes (and, where a cgroup counts them, threads) one run may have at once. */
  processes: number;
  /** Bytes one run may add to what it can write; also the largest file and the size of its /tmp. */
  diskBytes: number;
}

/** The nearest of `dir` and its ancestors that others may not search (o+x), if any. */
function closedAncestor(dir: string): string | null {
  for (let d = dir; ; d = dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return d;
    if (d === dirname(d)) return null;
  }
}

/**
 * The isolation plan of one evaluation, given what the machine offers (`support` null: the operator
 * chose --unsandboxed), as a function of the GPUs the job gets. Where the engine drops privileges,
 * `uid` (the evaluation's own: sandbox.ts `evaluationUid`) replaces the one the host check used.
 * Makes the evaluation folder
 * reachable by the sandbox's user, and says which folder is not where one above it is closed.
 */
export function planIsolation(o: {
  support: SandboxSupport | null;
  bwrap: string;
  /** The interpreter's own folders; those outside the system folders are bound too. */
  interpreterDirs: readonly string[];
  evaluationRoot: string;
  cgroups: CgroupControllers | null;
  processes: number;
  diskBytes: number;
  uid?: number;
  /**
   * The driver's view (index, minor number) of every GPU the evaluation may be given. Each must
   * have its device node, checked here, before any job runs: a missing one is an error naming it.
   */
  gpuNodes?: readonly GpuNode[];
}): (gpus: number[]) => IsolationPlan {
  const base = { cgroups: o.cgroups, processes: o.processes, diskBytes: o.diskBytes };
  if (!o.support?.ok) return () => ({ ...base, sandbox: null });
  const uid = o.support.dropToUid === null ? null : (o.uid ?? o.support.dropToUid);
  if (uid !== null) {
    // Found now: setpriv would fail before bubblewrap starts, and the run's exit 1 read as the submission's.
    const map = readUidMap();
    if (map && !uidsMapped(map, uid)) {
      throw new HarnessError(`the sandbox user (uid ${uid}) does not exist in this user namespace (uid_map: ${map.map((r) => `${r.inside}–${r.inside + r.count - 1}`).join(", ")}); a pod with hostUsers: false has only uids 0–65535. Run the runner as a non-root user, or where uids from ${uid} are mapped (docs/arc.md); \`probegate doctor\` checks this.`, "sandbox");
    }
    // mkdtemp made the evaluation folder 0700; the sandbox's user must pass through it to what is bound.
    chmodSync(o.evaluationRoot, 0o711);
    const closed = closedAncestor(dirname(o.evaluationRoot));
    if (closed) {
      throw new HarnessError(`the sandbox user (uid ${uid}) cannot reach the evaluation folder ${o.evaluationRoot}: ${closed} is not searchable by others. Run chmod o+x ${closed}, or point TMPDIR at a folder it can reach.`, "sandbox");
    }
  }
  const layout = systemLayout();
  const covered = (p: string) => p === "/" || layout.readOnly.some((d) => p === d || p.startsWith(`${d}/`));
  const interpreter = o.interpreterDirs.filter((p) => !covered(p));
  for (const dir of uid !== null ? interpreter : []) {
    // Found now, not as a bubblewrap failure that would read like the submission's.
    const closed = closedAncestor(dir);
    if (closed) {
      throw new HarnessError(`the sandbox user (uid ${uid}) cannot reach the interpreter's folder ${dir}: ${closed} is not searchable by others. Install the interpreter where others can read it, or run chmod o+x ${closed}.`, "sandbox");
    }
  }
  const readOnly = [...layout.readOnly, ...interpreter];
  const nodes = o.gpuNodes ?? [];
  const { missing } = resolveGpuNodes(nodes.map((n) => n.index), nodes);
  if (missing.length) throw missingGpuError(missing);
  return (gpus) => ({ ...base, sandbox: { bwrap: o.bwrap, dropToUid: uid, readOnly, symlinks: layout.symlinks, devices: gpuDevices(gpus, nodes) } });
}

/** What one phase may see: its working folder, what it reads and what it writes (host paths). */
export interface PhaseMounts {
  cwd: string;
  readOnly: readonly string[];
  readWrite: readonly string[];
  /** Under a read-write folder, kept read-only (the workspace's .git, which the engine runs git on). */
  readOnlyInside: readonly string[];
}

/**
 * The isolation of one run of a phase. In the sandbox, what the run may write is first handed to
 * the sandbox's user (the evaluation's own uid); the engine, as root, still reads it all afterwards.
 */
export async function isolationFor(plan: IsolationPlan, mounts: PhaseMounts): Promise<RunIsolation> {
  const sb = plan.sandbox;
  if (sb?.dropToUid != null && mounts.readWrite.length > 0) {
    const id = `${sb.dropToUid}:${sb.dropToUid}`;
    const r = await execa("chown", ["-R", "--no-dereference", id, ...mounts.readWrite], { reject: false });
    if (r.exitCode !== 0) throw new HarnessError(`could not hand the workspace to the sandbox user ${id}: ${String(r.stderr).trim()}`, "sandbox");
  }
  return {
    sandbox: sb
      ? {
          bwrap: sb.bwrap,
          readOnly: [...sb.readOnly, ...mounts.readOnly],
          readWrite: mounts.readWrite,
          readOnlyInside: mounts.readOnlyInside,
          symlinks: sb.symlinks,
          devices: sb.devices,
          tmpBytes: plan.diskBytes,
          cwd: mounts.cwd,
          dropToUid: sb.dropToUid,
          // RLIMIT_NPROC counts every task of the uid (the evaluation's own); a backstop above
          // the limit the engine enforces (the cgroup's pids.max, else the sampled process count).
          maxProcesses: sb.dropToUid !== null ? 2 * plan.processes : null,
          maxFileBytes: plan.diskBytes,
        }
      : null,
    cgroups: plan.cgroups,
    writable: mounts.readWrite,
  };
}
