/**
 * `probegate gate init`: a repository gate written from a repository's tree. It reads one commit
 * (nothing of it runs), plans the test selection from the static import graph, the environment from
 * what the repository declares, and writes task.yml, prompt.md, the generated probe and GATE.md.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { GatePlanError, planGate } from "../../core/gate-init/gate-plan.js";
import { publicInterface } from "../../core/gate-init/interfaces.js";
import { conftestsOf, pytestConfig } from "../../core/gate-init/pytest-discovery.js";
import { ID_PATTERN } from "../../core/task-spec.js";
import { InputError } from "../errors.js";
import { choosePython } from "../host.js";
import { planEnvironment } from "./environment-plan.js";
import { renderPrompt, renderReport, type ModuleInterface } from "./render-docs.js";
import { PROBE_FILE, renderProbe, renderTaskYml, watchedFiles, type GateSource } from "./render-task.js";
import { readRepoTree } from "./repo-tree.js";

export interface GateInitRequest {
  repo: string;
  paths: string[];
  ref: string;
  out?: string;
  id?: string;
  tests: string[];
  src: string[];
  requirements: string[];
  extras: string[] | null;
  maxHops?: number | null;
  /** --through-packages: select through every package `__init__.py` an import runs. */
  throughPackages?: boolean;
  python?: string;
  force?: boolean;
}

export interface GateInitResult {
  dir: string;
  id: string;
  sha: string;
  report: string;
  files: string[];
}

const ROOT_CONFIG = ["pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg"];
const GPU_WORDS = /\bnccl\b|\.cuda\(|torch\.cuda\.|device=["']cuda/;

/** The repository's name for the title and the default id: a clone's folder, a URL's last part (a folder called repo, src or .git: its parent's). */
function repoName(repo: string): string {
  const parts = repo.replace(/\/+$/, "").replace(/\.git$/, "").split(/[/:]/).filter(Boolean);
  while (parts.length > 1 && ["repo", "src", "checkout", ".git"].includes(parts.at(-1) as string)) parts.pop();
  return parts.at(-1) ?? "repo";
}

function defaultId(repo: string): string {
  const slug = repoName(repo).toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[-._]+|[-._]+$/g, "");
  return `${slug || "repo"}-gate`;
}

/** Writes the gate; throws an InputError naming what the repository lacks and the flag that fixes it. */
export async function gateInit(req: GateInitRequest, scratch: string): Promise<GateInitResult> {
  if (!req.paths.length) throw new InputError("gate init: --paths <globs...> is required: the paths the gate watches, e.g. --paths 'mypkg/comm/**'", { field: "--paths" });
  // The task loader wants a task's id to be its folder's name.
  const id = req.id ?? (req.out ? basename(resolve(req.out)) : defaultId(req.repo));
  if (!ID_PATTERN.test(id)) throw new InputError(`gate init: '${id}' is not a task id (lower-case letters, digits, '.', '_', '-'): pass --id, or an --out folder named like one`, { field: "--id" });
  const dir = resolve(req.out ?? id);
  if (basename(dir) !== id) throw new InputError(`gate init: --id ${id} and --out ${req.out} disagree: a task's folder is named for its id (drop one, or name the folder ${id})`, { field: "--out" });
  if (existsSync(dir) && readdirSync(dir).length && !req.force) throw new InputError(`gate init: ${dir} exists and is not empty: pass --force to overwrite it, or another --out`, { field: "--out" });
  const treeDir = join(scratch, "tree");
  mkdirSync(treeDir, { recursive: true });
  const tree = await readRepoTree(req.repo, req.ref, treeDir, scratch, choosePython(req.python));
  const rootFiles = new Map(ROOT_CONFIG.filter((f) => existsSync(join(treeDir, f))).map((f) => [f, readFileSync(join(treeDir, f), "utf8")]));
  const config = pytestConfig(rootFiles, tree.pyproject?.pytest ?? null);
  let plan;
  try {
    plan = planGate({ paths: tree.paths, sources: tree.sources, config, globs: req.paths, testGlobs: req.tests, src: req.src, maxHops: req.maxHops ?? null, edges: req.throughPackages ? "runs" : "uses" });
  } catch (e) {
    if (e instanceof GatePlanError) throw new InputError(`gate init: ${e.message}`, { field: e.flag });
    throw e;
  }
  const env = planEnvironment({ dir: treeDir, paths: tree.paths, project: tree.pyproject?.project ?? null, hasPyproject: tree.pyproject !== null, requirements: req.requirements, extras: req.extras });
  const src: GateSource = { id, title: `${repoName(req.repo)}: ${req.paths.filter((p) => !p.startsWith("!")).join(", ")}`, repo: req.repo, sha: tree.sha, plan, fromTree: env.fromTree };
  const fileSet = new Set(tree.paths);
  const watched = watchedFiles(plan, (t) => conftestsOf(t, fileSet));
  const modules: ModuleInterface[] = plan.globs.flatMap((g) => g.modules.map((m) => ({ path: m.path, name: m.name, defs: publicInterface(tree.sources.get(m.path) ?? "") })));
  const mapped = new Set(plan.globs.flatMap((g) => g.tests.map((t) => t.file)));
  const report = renderReport(src, {
    ref: req.ref,
    envNotes: env.notes,
    unmapped: plan.tests.filter((t) => !mapped.has(t)),
    gpuTests: [...mapped].filter((t) => GPU_WORDS.test(tree.sources.get(t) ?? "")),
    watched,
  });
  if (req.force) rmSync(dir, { recursive: true, force: true });
  const files: Record<string, string> = {
    "task.yml": renderTaskYml(src, watched),
    "prompt.md": renderPrompt(src, modules),
    [`probes/${PROBE_FILE}`]: renderProbe(src),
    "GATE.md": report,
  };
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(dir, rel, ".."), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return { dir, id, sha: tree.sha, report, files: Object.keys(files) };
}
