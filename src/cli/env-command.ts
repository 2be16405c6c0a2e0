import Table from "cli-table3";
import { relative, resolve } from "node:path";
import { formatBytes } from "../core/sizes.js";
import { ensureEnvironment, type BuiltEnvironment } from "../engine/environment/build-environment.js";
import { environmentRoot, listEnvironments } from "../engine/environment/environment-store.js";
import { environmentLabel, environmentRequest, treeEnvironmentRequest } from "../engine/environment/task-request.js";
import { ensureTreeEnvironment } from "../engine/environment/tree-environment.js";
import { HarnessError } from "../engine/errors.js";
import { loadTask, type LoadedTask } from "../engine/task-load.js";
import type { Io } from "./main.js";

/** One row of `probegate env build`: a task and its environment, or why it has none. */
export interface EnvBuildRow {
  task: string;
  /** Null: the task declares no environment (it runs on the runner's interpreter). */
  lockHash: string | null;
  lock: string | null;
  dir: string | null;
  python: string | null;
  interpreter: string | null;
  torch: string | null;
  /** "built", "reused", "none" (no environment declared), "needs-tree" (it follows the repository: give --tree) or "failed". */
  status: "built" | "reused" | "none" | "needs-tree" | "failed";
  seconds: number;
  sizeBytes: number | null;
  error: string | null;
}

function row(task: string, lock: string, env: BuiltEnvironment): EnvBuildRow {
  const m = env.manifest;
  return { task, lockHash: m.lockHash, lock, dir: env.dir, python: m.python, interpreter: m.interpreter, torch: m.torch, status: env.reused ? "reused" : "built", seconds: Math.round(env.seconds * 10) / 10, sizeBytes: m.sizeBytes, error: null };
}

/** A summary table as the rest of the CLI prints them (cli-table3, no colours). */
function table(head: string[], rows: string[][]): string {
  const t = new Table({ head, style: { head: [], border: [] } });
  t.push(...rows);
  return `${t.toString()}\n`;
}

/** The environment build of one task, if it declares one that can be built here and now. */
function buildFor(task: LoadedTask, tree: string | undefined, onProgress: (line: string) => void): { label: string; build: () => Promise<BuiltEnvironment> } | null {
  const req = environmentRequest(task);
  if (req) return { label: req.lockLabel, build: () => ensureEnvironment(req, { onProgress }) };
  const dir = tree ? resolve(tree) : null;
  const treeReq = dir ? treeEnvironmentRequest(task, { dir, label: `--tree ${tree}`, from: dir }) : null;
  if (treeReq) return { label: `${environmentLabel(task.spec.environment!)} of --tree ${tree}`, build: () => ensureTreeEnvironment(treeReq, { onProgress }) };
  return null;
}

/**
 * `probegate env build <task dir>…`: builds (or finds already built) each task's environment in the
 * runner's store, one task at a time, with phase lines on stderr; then a table (or JSON) of what
 * each task has. A gate whose environment follows its repository (environment.fromTree) is built
 * from the checkout `--tree` names, as an evaluation would from its merge base; without it, it is
 * listed as needing one. Exit 0 when every environment that can be built is ready, 3 when one could
 * not be built (its error names the package and the lock's line), 2 for a task folder that does not load.
 */
export async function envBuildCommand(dirs: readonly string[], flags: { json?: boolean; tree?: string }, io: Io): Promise<number> {
  const tasks = dirs.map((d) => loadTask(d));
  const rows: EnvBuildRow[] = [];
  const empty = { lockHash: null, lock: null, dir: null, python: null, interpreter: null, torch: null, seconds: 0, sizeBytes: null, error: null };
  for (const task of tasks) {
    const job = buildFor(task, flags.tree, (line) => io.stderr(`  · ${line}\n`));
    if (!job) {
      const env = task.spec.environment;
      if (env?.fromTree) {
        io.stderr(`▸ ${task.spec.id}: not built: its environment follows the repository (${environmentLabel(env)}), so each evaluation builds it from the PR's merge base. To build it ahead, pass a checkout of that base: probegate env build --tree <checkout> ${relative(process.cwd(), task.dir) || "."}\n`);
        rows.push({ ...empty, task: task.spec.id, lock: environmentLabel(env), status: "needs-tree" });
      } else rows.push({ ...empty, task: task.spec.id, status: "none" });
      continue;
    }
    io.stderr(`▸ ${task.spec.id}: environment ${job.label}\n`);
    try {
      const env = await job.build();
      rows.push(row(task.spec.id, job.label, env));
      io.stderr(`  ✓ ${env.reused ? "reused" : "built"} ${env.dir}\n`);
    } catch (e) {
      if (!(e instanceof HarnessError)) throw e;
      io.stderr(`  ✗ ${e.message}\n`);
      rows.push({ ...empty, task: task.spec.id, lock: job.label, status: "failed", error: e.message });
    }
  }
  if (flags.json) io.stdout(`${JSON.stringify(rows, null, 2)}\n`);
  else {
    const status = (r: EnvBuildRow) => (r.status === "none" ? "none declared" : r.status === "needs-tree" ? "needs --tree" : r.status);
    io.stdout(
      table(
        ["task", "lock hash", "python", "torch", "status", "seconds", "size on disk"],
        rows.map((r) => [r.task, r.lockHash?.slice(0, 16) ?? "-", r.python ?? "-", r.torch ?? "-", status(r), r.dir === null ? "-" : r.seconds.toFixed(1), r.sizeBytes === null ? "-" : formatBytes(r.sizeBytes)]),
      ),
    );
  }
  return rows.some((r) => r.status === "failed") ? 3 : 0;
}

/** `probegate env list`: the environments built on this runner (the store at $PROBEGATE_ENV_DIR). */
export function envListCommand(flags: { json?: boolean }, io: Io): number {
  const root = environmentRoot();
  const envs = listEnvironments(root);
  if (flags.json) {
    io.stdout(`${JSON.stringify(envs.map((e) => ({ dir: e.dir, executable: e.python, ...e.manifest })), null, 2)}\n`);
    return 0;
  }
  if (envs.length === 0) {
    io.stdout(`no environment built in ${root} (probegate env build <task dir> builds one)\n`);
    return 0;
  }
  io.stdout(
    table(
      ["folder", "lock", "python", "torch", "packages", "built", "build s", "size on disk"],
      envs.map((e) => [relative(root, e.dir), e.manifest.lockFile, e.manifest.python, e.manifest.torch ?? "-", String(e.manifest.packages), e.manifest.builtAt.slice(0, 19).replace("T", " "), e.manifest.buildS.toFixed(1), formatBytes(e.manifest.sizeBytes)]),
    ),
  );
  return 0;
}
