import { cpSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import type { TaskSpecInput } from "../core/task-spec.js";
import { ID_PATTERN } from "../core/task-spec.js";
import { VERSION_RANGE } from "../core/task-environment.js";
import { InputError } from "../engine/errors.js";
import { importPullRequest, officialCommand, type PrImport } from "../engine/import/pr-import.js";
import { isUrl, recordedRepo } from "../engine/import/repo-url.js";
import { expectedYaml, importRecord, probeSkeleton, promptSkeleton, taskYaml } from "./task-skeleton.js";

export interface TaskImportFlags {
  repo: string;
  prBase: string;
  prHead: string;
  tests: string[];
  out: string;
  keep?: string[];
  traceImports?: boolean;
  baseAs: "snapshot" | "git";
  title?: string;
  area: string;
  gpus: string;
  setup?: string;
  pytestPlugin?: string[];
  requiresTorch?: string;
  requiresGpus?: string;
  requiresCuda?: boolean;
  python?: string;
  timeout: string;
  worldSize: string;
  exclude?: string[];
  /** The repository's URL to record (default: --repo when a URL, else the clone's origin remote). */
  repoUrl?: string;
  /** Allow a change no test fails before (a performance PR): the official set is pass-to-pass only. */
  passToPassOnly?: boolean;
}

function positiveInt(v: string, flag: string, min = 0): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new InputError(`${flag}: '${v}' is not a whole number ≥ ${min}.`, { field: flag });
  return n;
}

/** Where the three folders of one task go, from `--out <root>/tasks/<id>`. */
function targets(out: string): { id: string; task: string; probes: string; examples: string } {
  const task = resolve(out);
  const id = basename(task);
  if (!ID_PATTERN.test(id)) throw new InputError(`--out: the task id '${id}' (the folder's name) must be lower-case letters, digits, '.', '_' and '-'.`, { field: "--out" });
  if (basename(dirname(task)) !== "tasks") throw new InputError(`--out: give a folder tasks/<id> of a task pack (got ${out}); the probes go to probes/<id> and the examples to examples/submissions/<id> beside it.`, { field: "--out" });
  const root = dirname(dirname(task));
  return { id, task, probes: join(root, "probes", id), examples: join(root, "examples", "submissions", id) };
}

function specFor(flags: TaskImportFlags, id: string, imp: PrImport, repoForSpec: string | null): TaskSpecInput {
  const ids = [...imp.classification.failToPass, ...imp.classification.passToPass];
  const requires: NonNullable<TaskSpecInput["requires"]> = {};
  if (flags.requiresTorch) requires.torch = flags.requiresTorch;
  if (flags.requiresGpus) requires.gpus = positiveInt(flags.requiresGpus, "--requires-gpus", 1);
  if (flags.requiresCuda) requires.cuda = true;
  return {
    id,
    title: flags.title ?? imp.subject,
    area: flags.area as TaskSpecInput["area"],
    prompt: "prompt.md",
    base: flags.baseAs === "git" && repoForSpec ? { git: { repo: repoForSpec, ref: imp.baseSha }, overlay: "overlay" } : { path: "base" },
    gpus: positiveInt(flags.gpus, "--gpus"),
    official: { command: officialCommand(ids), timeout: positiveInt(flags.timeout, "--timeout", 1), files: imp.tests },
    probes: { path: `../../probes/${id}` },
    ...(flags.setup ? { setup: { path: "setup", pytestPlugins: flags.pytestPlugin ?? [] } } : {}),
    ...(Object.keys(requires).length ? { requires } : {}),
    interfaces: [],
  };
}

/**
 * `probegate task import`: a task from a real change, as SWE-bench builds an instance. Runs the
 * change's tests before and after it, keeps the fail-to-pass and pass-to-pass ones as the official
 * command, the change as the reference submission, and writes skeletons of the prompt and a probe.
 * Everything is built in a temporary folder and moved into place at the end: bad input writes nothing.
 */
export async function taskImportCommand(flags: TaskImportFlags, io: { stdout: (s: string) => void; stderr: (s: string) => void }): Promise<number> {
  const t = targets(flags.out);
  for (const dir of [t.task, t.probes, t.examples]) {
    if (existsSync(dir)) throw new InputError(`${relative(process.cwd(), dir) || dir} already exists; task import writes a new task only (remove it, or choose another --out).`, { field: "--out" });
  }
  if (flags.requiresTorch && !VERSION_RANGE.test(flags.requiresTorch)) throw new InputError(`--requires-torch: '${flags.requiresTorch}' is not a version range such as ">=2.1" or ">=2.1,<3".`, { field: "--requires-torch" });
  if (!["training", "inference", "rl", "other"].includes(flags.area)) throw new InputError(`--area: '${flags.area}' is not one of training, inference, rl, other.`, { field: "--area" });
  const setupDir = flags.setup ? resolve(flags.setup) : undefined;
  if (setupDir && !existsSync(setupDir)) throw new InputError(`--setup: folder ${setupDir} does not exist.`, { field: "--setup" });
  if (flags.pytestPlugin?.length && !setupDir) throw new InputError("--pytest-plugin names a module of the --setup folder; give --setup too.", { field: "--pytest-plugin" });
  const repo = isUrl(flags.repo) ? flags.repo : resolve(flags.repo);
  // What task.yml and import.yml record: a URL that travels with the task, never the local clone's path.
  const recorded = await recordedRepo(repo, flags.repoUrl);
  if (flags.baseAs === "git" && !recorded.url) {
    throw new InputError(`--base-as git: task.yml must say where to clone the base from, and ${recorded.warning}.`, { field: "--repo-url" });
  }
  if (recorded.warning) io.stderr(`  warning: ${recorded.warning}${flags.baseAs === "git" ? "" : recorded.url ? " (import.yml records it)" : " (import.yml records none)"}.\n`);
  const imp = await importPullRequest(
    {
      repo,
      base: flags.prBase,
      head: flags.prHead,
      tests: flags.tests,
      keep: flags.keep ?? [],
      traceImports: flags.traceImports ?? false,
      python: flags.python,
      setupDir,
      pytestPlugins: flags.pytestPlugin ?? [],
      timeoutS: positiveInt(flags.timeout, "--timeout", 1),
      worldSize: positiveInt(flags.worldSize, "--world-size", 1),
      exclude: flags.exclude ?? [],
      prune: flags.baseAs === "snapshot",
      passToPassOnly: flags.passToPassOnly ?? false,
    },
    (line) => io.stderr(`  ${line}\n`),
  );
  // Staged beside the target (the same file system), so the three folders are moved into place whole.
  mkdirSync(dirname(t.task), { recursive: true });
  const staging = mkdtempSync(join(dirname(t.task), `.import-${t.id}-`));
  try {
    const st = { task: join(staging, "task"), probes: join(staging, "probes"), examples: join(staging, "examples") };
    for (const d of Object.values(st)) mkdirSync(d, { recursive: true });
    const treeDir = join(st.task, flags.baseAs === "git" ? "overlay" : "base");
    const copied = flags.baseAs === "git" ? imp.tests.filter((p) => existsSync(join(imp.headTree, p))) : imp.snapshot;
    for (const p of copied) {
      mkdirSync(dirname(join(treeDir, p)), { recursive: true });
      cpSync(join(imp.baseTree, p), join(treeDir, p));
    }
    if (setupDir) cpSync(setupDir, join(st.task, "setup"), { recursive: true });
    writeFileSync(join(st.task, "task.yml"), taskYaml(specFor(flags, t.id, imp, recorded.url), imp, recorded));
    writeFileSync(join(st.task, "import.yml"), importRecord(imp, recorded, flags.baseAs === "snapshot"));
    writeFileSync(join(st.task, "prompt.md"), promptSkeleton(imp));
    writeFileSync(join(st.probes, "probe_functional.py"), probeSkeleton(t.id));
    writeFileSync(join(st.examples, "reference.patch"), imp.referencePatch);
    writeFileSync(join(st.examples, "base.patch"), "");
    writeFileSync(join(st.examples, "expected.yml"), expectedYaml(imp.classification.failToPass.length === 0));
    for (const [from, to] of [[st.task, t.task], [st.probes, t.probes], [st.examples, t.examples]] as const) {
      mkdirSync(dirname(to), { recursive: true });
      renameSync(from, to);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
    imp.dispose();
  }
  const c = imp.classification;
  const excluded = c.leftOut.filter((l) => l.why.startsWith("excluded")).length;
  const rel = (p: string) => relative(process.cwd(), p);
  io.stdout(
    [
      `✓ ${t.id}: ${imp.sources.length} source files changed, ${imp.tests.length} test files${imp.testsChanged ? "" : " (existing ones: the change touches none)"}`,
      `  fail-to-pass ${c.failToPass.length}, pass-to-pass ${c.passToPass.length}${c.leftOut.length ? `, left out ${c.leftOut.length} (${excluded} by --exclude, ${c.leftOut.length - excluded} skipped or gone; import.yml says why)` : ""}`,
      ...(c.failToPass.length ? [] : ["  no test fails before the change: the official tests only check that nothing breaks; the hidden probes must carry the requirement"]),
      `  repository: ${recorded.url ?? "unknown (give --repo-url)"}${recorded.url ? ` (${recorded.source})` : ""}`,
      flags.baseAs === "git"
        ? `  base: git ${imp.baseSha}, the PR's test files as overlay`
        : `  base: pruned snapshot of ${imp.snapshot.length} of the repository's ${imp.baseFileCount} files: a submission patch may edit only these. To gate real PRs, which may touch any file, import with --base-as git.`,
      `  wrote ${rel(t.task)}, ${rel(t.probes)}, ${rel(t.examples)}`,
      `  next: finish prompt.md and the probe, then: probegate validate ${rel(t.task)}`,
      "",
    ].join("\n"),
  );
  return 0;
}
