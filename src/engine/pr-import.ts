import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import picomatch from "picomatch";
import { classifyTests, nodeId, type TestClassification, type TestOutcome } from "../core/test-split.js";
import { InputError } from "./errors.js";
import { git } from "./git.js";
import { choosePython } from "./host.js";
import { expandCommand, jobEnv, type JobContext } from "./jobs/job-env.js";
import { parseJunit } from "./junit.js";
import { PACKAGE_ROOT } from "./package-paths.js";
import { runCommand } from "./run-command.js";

/** What `probegate task import` was asked to import. */
export interface PrImportRequest {
  /** A git directory (bare or not) or a URL git can clone. */
  repo: string;
  base: string;
  head: string;
  /** Globs (or paths) of the change's test files, relative to the repository root. */
  tests: string[];
  /** More paths of the base to keep in a pruned snapshot (globs). */
  keep: string[];
  /** Add the base files the kept Python files import (a static trace; nothing is run for it). */
  traceImports: boolean;
  python?: string;
  /** Judge-owned files beside the tree while the tests run (as the task's `setup:` will give them). */
  setupDir?: string;
  pytestPlugins: string[];
  timeoutS: number;
  worldSize: number;
  /** Test ids holding any of these strings are left out (tests this kind of runner cannot run, say). */
  exclude: string[];
  /** Run the tests in the pruned snapshot (what a snapshot task will run in), not the whole tree. */
  prune: boolean;
}

/** Everything a task folder is made from; nothing is written to the user's folders here. */
export interface PrImport {
  baseSha: string;
  headSha: string;
  subject: string;
  message: string;
  tests: string[];
  sources: string[];
  /** The change to the source files: the reference submission. */
  referencePatch: string;
  /** Paths of the base kept in the snapshot (the head's version for test files). */
  snapshot: string[];
  classification: TestClassification;
  /** Where the trees were exported, to copy the snapshot from; removed by dispose(). */
  baseTree: string;
  headTree: string;
  dispose(): void;
}

/** The pytest command the task will run: the fail-to-pass and pass-to-pass ids, nothing else. */
export function officialCommand(ids: readonly string[]): string[] {
  return ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml={junit}", ...ids];
}

async function resolveCommit(gitDir: string, sha: string, flag: string, repo: string): Promise<string> {
  return git(gitDir, ["rev-parse", "--verify", "--quiet", `${sha}^{commit}`], {
    onError: () => new InputError(`${flag}: commit '${sha}' is not in the repository ${repo}. Fetch it there first (git fetch origin ${sha}), or check the SHA.`, { field: flag }),
  });
}

async function exportCommit(gitDir: string, sha: string, dest: string): Promise<void> {
  mkdirSync(dest, { recursive: true });
  const tar = await execa("git", ["--git-dir", gitDir, "archive", "--format=tar", sha], { encoding: "buffer", reject: false });
  if (tar.exitCode !== 0) throw new InputError(`cannot export ${sha}: ${Buffer.from(tar.stderr).toString().trim()}`);
  const untar = await execa("tar", ["-x", "-C", dest], { input: tar.stdout, reject: false });
  if (untar.exitCode !== 0) throw new InputError(`cannot unpack ${sha}: ${String(untar.stderr).trim()}`);
}

/** Runs the candidate tests in one tree, as the official phase will (same env, limits, JUnit). */
async function runTests(req: PrImportRequest, tree: string, root: string, tests: string[], label: string): Promise<{ outcomes: Map<string, TestOutcome>; log: string; exitCode: number | null }> {
  const junit = join(root, `${label}.xml`);
  const ctx: JobContext = {
    workspace: tree,
    root,
    backend: req.worldSize > 0 && process.env.PROBEGATE_BACKEND === "nccl" ? "nccl" : "gloo",
    worldSize: req.worldSize,
    cudaVisibleDevices: process.env.CUDA_VISIBLE_DEVICES ?? "",
    threadsPerRank: 1,
    isolation: { sandbox: null, cgroups: null, processes: 4096, diskBytes: 4 * 1024 ** 3 },
    setupDir: req.setupDir ?? null,
  };
  const plugins = req.pytestPlugins.map((p) => ` -p ${p}`).join("");
  const env = jobEnv(ctx, plugins ? { PYTEST_ADDOPTS: plugins.trim() } : {});
  // One file that fails to collect must not stop the others from running: a test that passes both
  // before and after would otherwise be taken for fail-to-pass.
  const argv = expandCommand([...officialCommand(tests), "--continue-on-collection-errors"], { python: choosePython(req.python), junit, workspace: tree });
  const run = await runCommand(argv, {
    cwd: tree,
    env,
    limits: { timeoutS: req.timeoutS, outputBytes: 16 * 2 ** 20, memoryBytes: 16 * 2 ** 30, processes: 4096, diskBytes: 4 * 1024 ** 3 },
  });
  if (run.spawnError) throw new InputError(`the tests could not start at ${label}: ${run.spawnError}`);
  if (run.limit) throw new InputError(`the tests at ${label} were stopped by the ${run.limit} limit (--timeout ${req.timeoutS}).`);
  const outcomes = new Map<string, TestOutcome>();
  if (existsSync(junit)) {
    for (const tc of parseJunit(readFileSync(junit, "utf8")).cases) outcomes.set(nodeId(tc, tests), tc.outcome);
  }
  return { outcomes, log: run.log, exitCode: run.exitCode };
}

const lastLines = (log: string) => log.trim().split("\n").slice(-15).join("\n");

/**
 * Reads a change from a repository and runs its tests before and after it: the test files of the
 * head over the base tree (before), then the head (after). Throws InputError, naming the test and
 * the commit, for a SHA the repository lacks, a change with no test file or no source file, no
 * test that fails before, or a test that does not pass after. Writes only to a temporary folder.
 */
export async function importPullRequest(req: PrImportRequest, progress: (line: string) => void): Promise<PrImport> {
  const scratch = mkdtempSync(join(tmpdir(), "probegate-import-"));
  const dispose = () => rmSync(scratch, { recursive: true, force: true });
  try {
    const gitDir = join(scratch, "src.git");
    progress(`reading ${req.repo}`);
    await git(scratch, ["clone", "--quiet", "--bare", "--no-tags", req.repo, gitDir], {
      onError: (e) => new InputError(`--repo: cannot read the repository ${req.repo}: ${e.split("\n")[0]}`, { field: "--repo" }),
    });
    const baseSha = await resolveCommit(gitDir, req.base, "--pr-base", req.repo);
    const headSha = await resolveCommit(gitDir, req.head, "--pr-head", req.repo);
    const changed = (await git(gitDir, ["diff", "--name-only", "--no-renames", baseSha, headSha])).split("\n").filter(Boolean);
    const isTest = picomatch(req.tests, { dot: true });
    const tests = changed.filter((p) => isTest(p));
    const sources = changed.filter((p) => !isTest(p));
    const shortB = baseSha.slice(0, 12);
    const shortH = headSha.slice(0, 12);
    if (tests.length === 0) throw new InputError(`--tests: no file the change ${shortB}..${shortH} touches matches ${req.tests.join(", ")} (it touches ${changed.join(", ") || "nothing"}).`, { field: "--tests" });
    if (sources.length === 0) throw new InputError(`the change ${shortB}..${shortH} touches only test files (${tests.join(", ")}): there is no change for a submission to make.`, { field: "--tests" });
    const pyTests = tests.filter((t) => t.endsWith(".py") && /(^|\/)test_[^/]*\.py$|_test\.py$/.test(t));
    if (pyTests.length === 0) throw new InputError(`--tests: none of ${tests.join(", ")} is a pytest file (test_*.py or *_test.py).`, { field: "--tests" });
    const subject = await git(gitDir, ["log", "-1", "--format=%s", headSha]);
    const message = await git(gitDir, ["log", "-1", "--format=%b", headSha]);
    const referencePatch = await git(gitDir, ["diff", "--no-renames", "--full-index", "--binary", baseSha, headSha, "--", ...sources]);

    const baseTree = join(scratch, "before");
    const headTree = join(scratch, "after");
    await exportCommit(gitDir, baseSha, baseTree);
    await exportCommit(gitDir, headSha, headTree);
    // "Before" is the base with the PR's test files, as the task's workspace will be.
    for (const t of tests) {
      rmSync(join(baseTree, t), { force: true });
      if (existsSync(join(headTree, t))) {
        mkdirSync(join(baseTree, t, ".."), { recursive: true });
        await execa("cp", ["-p", join(headTree, t), join(baseTree, t)]);
      }
    }
    const snapshot = await snapshotPaths(req, baseTree, [...sources, ...tests], progress);
    // A snapshot task runs its tests in the snapshot: so do these runs, which also proves the snapshot holds what they import.
    let runBefore = baseTree;
    let runAfter = headTree;
    if (req.prune) {
      runBefore = join(scratch, "pruned-before");
      runAfter = join(scratch, "pruned-after");
      for (const [from, to] of [[baseTree, runBefore], [headTree, runAfter]] as const) {
        for (const p of new Set([...snapshot, ...(from === headTree ? sources : [])])) {
          if (!existsSync(join(from, p))) continue;
          mkdirSync(join(to, p, ".."), { recursive: true });
          await execa("cp", ["-p", join(from, p), join(to, p)]);
        }
      }
    }
    const runRoot = join(scratch, "runs");
    mkdirSync(runRoot);
    progress(`running ${pyTests.join(", ")} before the change (base ${shortB} + the PR's tests)`);
    const before = await runTests(req, runBefore, runRoot, pyTests, `base ${shortB}`);
    progress(`  ${summarise(before.outcomes)}`);
    progress(`running ${pyTests.join(", ")} after the change (head ${shortH})`);
    const after = await runTests(req, runAfter, runRoot, pyTests, `head ${shortH}`);
    progress(`  ${summarise(after.outcomes)}`);
    if (after.outcomes.size === 0) {
      throw new InputError(`no test of ${pyTests.join(", ")} ran at head ${headSha} (pytest exit ${after.exitCode}); its output ends:\n${lastLines(after.log)}`);
    }
    const excluded = (id: string) => req.exclude.some((x) => id.includes(x));
    const keepOnly = (m: Map<string, TestOutcome>) => new Map([...m].filter(([id]) => !excluded(id)));
    const classification = classifyTests(keepOnly(before.outcomes), keepOnly(after.outcomes));
    const dropped = [...after.outcomes.keys()].filter(excluded);
    if (req.exclude.length && dropped.length === 0) throw new InputError(`--exclude: no test id holds ${req.exclude.map((x) => `'${x}'`).join(" or ")}.`, { field: "--exclude" });
    classification.leftOut.push(...dropped.map((id) => ({ id, why: `excluded (--exclude): ${after.outcomes.get(id)} after the change` })));
    if (classification.failAfter.length) {
      const list = classification.failAfter.slice(0, 10).map((t) => `${t.id} (${t.outcome})`).join(", ");
      throw new InputError(`${classification.failAfter.length} test(s) do not pass after the change, at head ${headSha}: ${list}${classification.failAfter.length > 10 ? ", …" : ""}. A task needs tests that pass on the merged change; narrow --tests, or fix the runner (its output ends:\n${lastLines(after.log)})`);
    }
    if (classification.failToPass.length === 0) {
      throw new InputError(`no test fails before the change: at base ${baseSha} with the PR's tests, ${classification.passToPass.join(", ") || "every test"} already pass${classification.passToPass.length === 1 ? "es" : ""}. A task needs at least one fail-to-pass test; name the tests the change makes pass (--tests).`);
    }
    return { baseSha, headSha, subject, message, tests, sources, referencePatch: referencePatch.endsWith("\n") ? referencePatch : `${referencePatch}\n`, snapshot, classification, baseTree, headTree, dispose };
  } catch (e) {
    dispose();
    throw e;
  }
}

function summarise(outcomes: ReadonlyMap<string, TestOutcome>): string {
  const n = (o: TestOutcome) => [...outcomes.values()].filter((x) => x === o).length;
  return `${outcomes.size} tests: ${n("passed")} passed, ${n("failed") + n("error")} failed, ${n("skipped")} skipped`;
}

function walk(dir: string, rel = "", out: string[] = []): string[] {
  for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) walk(dir, p, out);
    else out.push(p);
  }
  return out;
}

/**
 * Paths of the base a pruned snapshot keeps: the change's files and its tests (those the base
 * has), what --keep names, and with --trace-imports the Python files they import from the tree.
 */
async function snapshotPaths(req: PrImportRequest, baseTree: string, changed: string[], progress: (line: string) => void): Promise<string[]> {
  const all = walk(baseTree);
  const keep = new Set(changed.filter((p) => all.includes(p)));
  if (req.keep.length) {
    const isKept = picomatch(req.keep, { dot: true });
    const matched = all.filter((p) => isKept(p));
    if (matched.length === 0) throw new InputError(`--keep: no file of the base matches ${req.keep.join(", ")}.`, { field: "--keep" });
    for (const p of matched) keep.add(p);
  }
  if (req.traceImports) {
    const entries = [...keep].filter((p) => p.endsWith(".py"));
    const r = await execa(choosePython(req.python), [join(PACKAGE_ROOT, "scripts", "import_closure.py"), baseTree, ...entries], { reject: false });
    if (r.exitCode !== 0) throw new InputError(`--trace-imports: the import trace failed: ${String(r.stderr).trim().split("\n").pop()}`);
    const traced = String(r.stdout).split("\n").filter(Boolean);
    progress(`import trace: ${traced.length} Python files of the base are imported by the change and its tests`);
    for (const p of traced) keep.add(p);
  }
  return [...keep].sort();
}
