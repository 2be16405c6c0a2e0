/**
 * The environment of a generated gate: `environment.fromTree` over what the repository declares
 * (its requirement files and pyproject.toml's [project] dependencies with the extras its tests need),
 * with the pins every gate of the pack has (torch for the probe kit's rank processes, pytest). Each
 * file chosen is read here with the engine's own readers (`readTreeRequirements`, `readPyproject`),
 * so a file the engine would refuse at evaluation time is left out now, saying why.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { normalizePackage, type TreeEnvironment } from "../../core/task-environment.js";
import { projectRequirements, ProjectTableProblem, type ProjectTable } from "../environment/pyproject-requirements.js";
import { readTreeRequirements, type DeclaredRequirement, type TreeContext } from "../environment/tree-requirements.js";
import { HarnessError, InputError } from "../errors.js";

/** The pack's pins (tasks/*-gate/environment/requirements.in): the PyPI torch runs on CPU with gloo and on CUDA with NCCL. */
export const GATE_PINS = ["torch==2.15.0", "pytest==9.2.0"];
/**
 * A setuptools that still ships `pkg_resources` (81.0.0 does; 84.2.1, what an unpinned one resolved
 * to, does not): a tree that imports it and leaves setuptools unbounded fails to collect every test
 * on both trees (torchtnt's version module did: bench/results/gate-init-tnt.md).
 */
export const PKG_RESOURCES_PIN = "setuptools==81.0.0";
const PKG_RESOURCES_IMPORT = /^[ \t]*(?:import[ \t]+pkg_resources\b|from[ \t]+pkg_resources[ \t.])/m;

/** The first `file:line` of the tree's Python that imports pkg_resources, or null. */
export function pkgResourcesImport(dir: string, paths: readonly string[]): string | null {
  for (const p of paths) {
    if (!p.endsWith(".py")) continue;
    let text: string;
    try {
      const file = join(dir, p);
      if (statSync(file).size > 2 ** 20) continue;
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    const m = PKG_RESOURCES_IMPORT.exec(text);
    if (m) return `${p}:${text.slice(0, m.index).split("\n").length}`;
  }
  return null;
}

/** Packages that build only against CUDA: excluded where the repository declares them (a CPU runner cannot build them). */
const CUDA_ONLY = ["flash-attn", "transformer-engine", "apex", "mamba-ssm", "causal-conv1d", "xformers", "flashinfer-python", "deepspeed"];
/** Requirement files of other purposes than running tests. */
const NOT_FOR_TESTS = /(^|[-_./])(docs?|lint|style|format|mypy|typing|build|release|publish|bench(mark)?s?|cuda|gpu|npu|rocm|amd|tpu|xpu|hpu|sglang|vllm|trtllm|serving)([-_.]|$)/;
/** Extras that hold what the tests need, in the order tried. */
const TEST_EXTRAS = ["test", "tests", "testing", "dev"];

export interface EnvironmentPlan {
  fromTree: TreeEnvironment;
  /** One line per choice, for the report. */
  notes: string[];
}

export interface EnvironmentInput {
  dir: string;
  paths: readonly string[];
  project: ProjectTable | null;
  hasPyproject: boolean;
  /** --requirements: the files to read, over the choice made here. */
  requirements: readonly string[];
  /** --extras: the pyproject extras, over the choice made here. */
  extras: readonly string[] | null;
}

/** requirements*.txt and requirements/*.txt, and the prefixed names (dev-requirements.txt, test_requirements.txt) at the top. */
const isRequirementFile = (p: string) => /^(?:[\w.]+[-_])?requirements[^/]*\.txt$/.test(p) || /^requirements\/[^/]+\.txt$/.test(p);

export function planEnvironment(input: EnvironmentInput): EnvironmentPlan {
  const notes: string[] = [];
  const ctx: TreeContext = { dir: input.dir, label: "the repository", declaredIn: "the gate's task.yml", exclude: [] };
  const declared: DeclaredRequirement[] = [];
  const chosen: string[] = [];
  const candidates = input.requirements.length ? [...input.requirements] : input.paths.filter(isRequirementFile);
  for (const file of candidates) {
    if (!input.requirements.length && NOT_FOR_TESTS.test(file.replace(/^requirements\/?/, ""))) {
      notes.push(`${file}: left out, named for another purpose than the tests (docs, lint, build, an accelerator or serving backend…); pass --requirements to choose the files yourself`);
      continue;
    }
    try {
      const read = readTreeRequirements(ctx, [file]);
      declared.push(...read.requirements);
      chosen.push(file);
      notes.push(`${file}: ${read.requirements.length} requirements${read.files.length > 1 ? ` (with ${read.files.slice(1).map((f) => f.path).join(", ")})` : ""}`);
    } catch (e) {
      if (!(e instanceof HarnessError)) throw e;
      if (input.requirements.length) throw new InputError(`--requirements ${file}: ${e.message.replace(/; no test or probe was run\.$/, "")}`, { field: "--requirements" });
      notes.push(`${file}: left out, the engine would refuse it: ${e.message.replace(/; no test or probe was run\.$/, "")}`);
    }
  }
  let pyproject: TreeEnvironment["pyproject"];
  const project = input.project;
  if (project && !(Array.isArray(project.dynamic) && project.dynamic.includes("dependencies"))) {
    const optional = Object.keys((project["optional-dependencies"] ?? {}) as Record<string, unknown>);
    const extras: string[] = input.extras ? [...input.extras] : TEST_EXTRAS.filter((x) => optional.some((o) => normalizePackage(o) === x)).slice(0, 1);
    try {
      const reqs = projectRequirements(project, extras, "pyproject.toml");
      if (reqs.length || extras.length) {
        pyproject = { path: "pyproject.toml", extras };
        declared.push(...reqs);
        notes.push(`pyproject.toml: [project] dependencies${extras.length ? ` and the extra${extras.length > 1 ? "s" : ""} ${extras.join(", ")}` : ""} (${reqs.length} requirements)${!input.extras && optional.length ? `; extras not taken: ${optional.filter((o) => !extras.includes(o)).join(", ") || "none"} (--extras to choose)` : ""}`);
      }
    } catch (e) {
      if (!(e instanceof ProjectTableProblem)) throw e;
      throw new InputError(`pyproject.toml: ${e.message} (pass --extras naming extras it defines)`, { field: "--extras" });
    }
  } else if (project) {
    notes.push("pyproject.toml: its dependencies are dynamic (computed by its build backend, which the engine never runs): not read; name their requirement files with --requirements");
  }
  if (!chosen.length && !pyproject) {
    const what = input.hasPyproject ? (project ? "pyproject.toml's [project] table declares no dependencies" : "pyproject.toml has no [project] table") : "there is no pyproject.toml";
    throw new InputError(
      `the repository declares no dependencies for its tests: no requirements*.txt or requirements/*.txt the engine can read, and ${what}. Pass --requirements <files> naming its requirement files (pip's format), or --extras for a pyproject that declares them in extras`,
      { field: "--requirements" },
    );
  }
  const names = new Set(declared.map((r) => normalizePackage(r.name)));
  const exclude = CUDA_ONLY.filter((n) => names.has(n));
  if (exclude.length) notes.push(`excluded (they build only against CUDA; the gate runs on CPU and gloo): ${exclude.join(", ")}`);
  for (const pin of GATE_PINS) {
    const name = normalizePackage(pin.split("==")[0] as string);
    const theirs = declared.filter((r) => normalizePackage(r.name) === name).map((r) => `${r.text} (${r.file}${r.line ? `:${r.line}` : ""})`);
    notes.push(`pinned ${pin}${theirs.length ? `, over the repository's ${theirs.join(", ")}` : ""}: ${name === "torch" ? "the probe kit's rank processes and counters need it, and every gate of the pack runs this torch (CPU with gloo, CUDA with NCCL)" : "the official command runs pytest"}`);
  }
  const pins = [...GATE_PINS];
  const usesPkgResources = pkgResourcesImport(input.dir, input.paths);
  if (usesPkgResources) {
    const theirs = declared.filter((r) => normalizePackage(r.name) === "setuptools");
    // Their own bound (== or <) is theirs to keep; an unbounded one drifts past pkg_resources.
    if (theirs.some((r) => /==|<|~=/.test(r.text))) notes.push(`${usesPkgResources} imports pkg_resources; setuptools is bounded by the repository (${theirs.map((r) => r.text).join(", ")}): not pinned`);
    else {
      pins.push(PKG_RESOURCES_PIN);
      notes.push(`pinned ${PKG_RESOURCES_PIN}${theirs.length ? `, over the repository's ${theirs.map((r) => `${r.text} (${r.file}${r.line ? `:${r.line}` : ""})`).join(", ")}` : ""}: ${usesPkgResources} imports pkg_resources, which newer setuptools releases no longer ship (84.2.1 did not)`);
    }
  }
  return { fromTree: { requirements: chosen, ...(pyproject ? { pyproject } : {}), pins, exclude }, notes };
}
