import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { nodeId, type TestOutcome } from "../../core/test-split.js";
import { InputError } from "../errors.js";
import { choosePython } from "../host.js";
import { expandCommand, jobEnv, jobPythonPath, type JobContext } from "../jobs/job-env.js";
import { parseJunit } from "../junit.js";
import { PACKAGE_ROOT } from "../package-paths.js";
import { runCommand } from "../run-command.js";
import { officialCommand, type PrImportRequest } from "./types.js";

/** A test file pytest could not import, with pytest's own words for why. */
export interface CollectionFailure {
  file: string;
  /** pytest's message: the `E   …` lines of its report, else its last line. */
  why: string;
}

/** One run of the candidate tests in one tree. */
export interface TestRun {
  /** Test id → how it ended; a file that could not be collected appears as its path, outcome error. */
  outcomes: Map<string, TestOutcome>;
  /** Test id → the first line of its failure or error message. */
  messages: Map<string, string>;
  collectionFailures: CollectionFailure[];
  /** Ids --exclude deselected: collected, never run. */
  deselected: string[];
  log: string;
  exitCode: number | null;
}

const PLUGIN = "probegate_import_exclude";

/** What pytest said about a collection error: the `E   ` lines, else the last non-blank line. */
function pytestWhy(detail: string): string {
  const lines = detail.split("\n").map((l) => l.trimEnd());
  const e = lines.filter((l) => /^E\s/.test(l)).map((l) => l.replace(/^E\s+/, ""));
  if (e.length) return e.join(" / ");
  return lines.filter((l) => l.trim()).at(-1)?.trim() ?? "(pytest gave no message)";
}

/** Runs the candidate tests in one tree, as the official phase will (same env, limits, JUnit). */
export async function runTests(req: PrImportRequest, tree: string, root: string, tests: string[], label: string): Promise<TestRun> {
  const slug = label.replace(/[^A-Za-z0-9]+/g, "-");
  const junit = join(root, `${slug}.xml`);
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
  const plugins = req.pytestPlugins.map((p) => `-p ${p}`);
  const extra: Record<string, string> = {};
  const deselectedFile = join(root, `${slug}.deselected`);
  if (req.exclude.length) {
    // The plugin goes in a folder of its own, last on PYTHONPATH: nothing else of scripts/ is importable.
    const pluginDir = join(root, "plugin");
    mkdirSync(pluginDir, { recursive: true });
    copyFileSync(join(PACKAGE_ROOT, "scripts", `${PLUGIN}.py`), join(pluginDir, `${PLUGIN}.py`));
    plugins.push(`-p ${PLUGIN}`);
    Object.assign(extra, { PYTHONPATH: jobPythonPath(ctx, pluginDir), PROBEGATE_IMPORT_EXCLUDE: JSON.stringify(req.exclude), PROBEGATE_IMPORT_DESELECTED: deselectedFile });
  }
  if (plugins.length) extra.PYTEST_ADDOPTS = plugins.join(" ");
  const env = jobEnv(ctx, extra);
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
  const out: TestRun = { outcomes: new Map(), messages: new Map(), collectionFailures: [], deselected: [], log: run.log, exitCode: run.exitCode };
  if (existsSync(junit)) {
    for (const tc of parseJunit(readFileSync(junit, "utf8")).cases) {
      const id = nodeId(tc, tests);
      out.outcomes.set(id, tc.outcome);
      if (tc.outcome === "failed" || tc.outcome === "error") out.messages.set(id, firstLine(tc.message || tc.detail || ""));
      // pytest reports a module it could not import as a testcase with no classname, named for the module.
      if (tc.classname === "" && tc.outcome === "error" && tests.includes(id)) out.collectionFailures.push({ file: id, why: pytestWhy(tc.detail || tc.message || "") });
    }
  }
  if (existsSync(deselectedFile)) out.deselected = readFileSync(deselectedFile, "utf8").split("\n").filter(Boolean);
  return out;
}

/** The first non-blank line of a message (pytest's assertion messages run over many). */
export function firstLine(message: string): string {
  return message.split("\n").find((l) => l.trim())?.trim() ?? "";
}

/** "4 tests: 1 passed, 0 failed, 3 errors, 0 skipped" — every outcome counted as what it was. */
export function summarise(run: TestRun): string {
  const n = (o: TestOutcome) => [...run.outcomes.values()].filter((x) => x === o).length;
  const parts = [`${run.outcomes.size} tests: ${n("passed")} passed, ${n("failed")} failed, ${n("error")} errors, ${n("skipped")} skipped`];
  if (run.collectionFailures.length) parts.push(`${run.collectionFailures.length} file${run.collectionFailures.length === 1 ? "" : "s"} not collected (counted as errors)`);
  if (run.deselected.length) parts.push(`${run.deselected.length} deselected by --exclude (not run)`);
  return parts.join("; ");
}

/** The last lines of a run's output, for an error message. */
export const lastLines = (log: string, n = 15) => log.trim().split("\n").slice(-n).join("\n");
