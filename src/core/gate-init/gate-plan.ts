/**
 * What `probegate gate init` decides from a repository's tree: the Python modules each gated path glob
 * holds, the repository's test files (pytest's conventions and configuration), and for each glob the
 * tests that import one of its modules, directly or through other modules of the tree (with the chain
 * of imports that shows it). Pure: the tree comes in as its paths and its Python sources.
 */
import picomatch from "picomatch";
import { chainTo, type ImportEdges, importGraph, reachable } from "./import-graph.js";
import { conftestsOf, importRoots, testFiles, type PytestConfig } from "./pytest-discovery.js";

/** A problem with the repository or the flags, and the flag that fixes it. */
export class GatePlanError extends Error {
  constructor(message: string, readonly flag: string) {
    super(message);
  }
}

export interface MappedTest {
  file: string;
  /** The imports from the test to the gated module: [test, …, module]. */
  chain: string[];
}

export interface GatedGlob {
  glob: string;
  /** Python modules the glob holds (not tests): [path, dotted name]. */
  modules: Array<{ path: string; name: string }>;
  tests: MappedTest[];
}

export interface GatePlan {
  config: PytestConfig;
  tests: string[];
  roots: string[];
  exclude: string[];
  globs: GatedGlob[];
  /** How imports became edges of the selection's import graph. */
  edges: ImportEdges;
}

export interface PlanInput {
  /** Every file of the tree, relative, '/'-separated. */
  paths: readonly string[];
  /** path → text of each Python file. */
  sources: ReadonlyMap<string, string>;
  config: PytestConfig;
  /** --paths: globs of gated paths; those starting with '!' exclude. */
  globs: readonly string[];
  /** --tests: globs naming the test files, over pytest's discovery. */
  testGlobs: readonly string[];
  /** --src: more folders on sys.path. */
  src: readonly string[];
  /** --max-hops: only tests whose import chain to a gated module has at most this many imports (1: direct); null: any. */
  maxHops?: number | null;
  /** --through-packages: "runs" (every package `__init__.py` an import runs is an edge); default "uses" (import-graph.ts, ImportEdges). */
  edges?: ImportEdges;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The dotted name `path` is imported by from the first root it lies under with identifier segments; null: none. */
export function moduleName(path: string, roots: readonly string[]): string | null {
  for (const root of [...roots].sort((a, b) => b.length - a.length)) {
    if (root && !path.startsWith(`${root}/`)) continue;
    const parts = path.slice(root ? root.length + 1 : 0).replace(/\.py$/, "").split("/");
    if (parts.at(-1) === "__init__") parts.pop();
    if (parts.length && parts.every((p) => IDENT.test(p))) return parts.join(".");
  }
  return null;
}

/** Top-level packages of the tree (folders with an __init__.py at the root or under src/), for messages. */
function packagesOf(paths: readonly string[]): string[] {
  return [...new Set(paths.map((p) => /^(?:src\/)?([^/]+)\/__init__\.py$/.exec(p)?.[1]).filter((p): p is string => !!p))].sort();
}

/** Plans the gate; throws a GatePlanError naming what is missing and the flag to pass. */
export function planGate(input: PlanInput): GatePlan {
  const include = input.globs.filter((g) => !g.startsWith("!"));
  const exclude = input.globs.filter((g) => g.startsWith("!")).map((g) => g.slice(1));
  if (include.length === 0) throw new GatePlanError("--paths names no path to gate (only exclusions): give globs of the modules, e.g. --paths 'mypkg/comm/**'", "--paths");
  const excluded = exclude.length ? picomatch(exclude, { dot: true }) : () => false;
  const fileSet = new Set(input.paths);
  let tests = testFiles(input.paths, input.config);
  if (input.testGlobs.length) {
    const named = picomatch([...input.testGlobs], { dot: true });
    tests = input.paths.filter((p) => p.endsWith(".py") && named(p)).sort();
    if (tests.length === 0) throw new GatePlanError(`--tests ${input.testGlobs.join(" ")} matches no Python file of the tree`, "--tests");
  }
  if (tests.length === 0) {
    const where = input.config.testpaths.length ? `under testpaths ${input.config.testpaths.join(", ")} (${input.config.from})` : "anywhere in the tree";
    throw new GatePlanError(`the repository has no tests: no file named ${input.config.pythonFiles.join(" or ")} ${where}. Pass --tests <globs> naming its test files`, "--tests");
  }
  const testSet = new Set(tests);
  const roots = importRoots(fileSet, tests, input.config, input.src);
  const graph = importGraph(input.sources, roots, input.edges ?? "uses");
  for (const t of tests) for (const c of conftestsOf(t, fileSet)) graph.get(t)?.add(c);
  const walks = new Map(tests.map((t) => [t, reachable(graph, t)]));
  const globs: GatedGlob[] = include.map((glob) => {
    const matches = picomatch(glob, { dot: true });
    const hit = input.paths.filter((p) => matches(p) && !excluded(p));
    if (hit.length === 0) throw new GatePlanError(`--paths ${glob} matches no file of the tree${packagesOf(input.paths).length ? ` (its packages: ${packagesOf(input.paths).join(", ")})` : ""}`, "--paths");
    const py = hit.filter((p) => p.endsWith(".py") && !testSet.has(p) && !/(^|\/)conftest\.py$/.test(p));
    const modules = py.map((path) => ({ path, name: moduleName(path, roots) })).filter((m): m is { path: string; name: string } => m.name !== null);
    if (modules.length === 0) {
      const why = py.length
        ? `its Python files (${py.slice(0, 3).join(", ")}) have no importable module name under the folders on sys.path (${roots.map((r) => r || ".").join(", ")})`
        : `it holds no Python module (${hit.slice(0, 3).join(", ")}${hit.length > 3 ? ", …" : ""})`;
      const pkgs = packagesOf(input.paths);
      throw new GatePlanError(`--paths ${glob}: no importable package: ${why}. Pass --paths globs of a package's modules${pkgs.length ? ` (the tree's packages: ${pkgs.join(", ")})` : ""}, or --src <folder> for the folder its imports start from`, "--src");
    }
    const mapped: MappedTest[] = [];
    for (const t of tests) {
      const walk = walks.get(t) as Map<string, string | null>;
      const chains = modules.map((m) => chainTo(walk, m.path)).filter((c) => c.length > 0);
      const chain = chains.length ? chains.reduce((a, b) => (b.length < a.length ? b : a)) : null;
      if (chain && (input.maxHops == null || chain.length - 1 <= input.maxHops)) mapped.push({ file: t, chain });
    }
    return { glob, modules, tests: mapped };
  });
  if (globs.every((g) => g.tests.length === 0)) {
    throw new GatePlanError(
      `no test of the repository imports the gated modules (${globs.flatMap((g) => g.modules.map((m) => m.name)).slice(0, 5).join(", ")}), directly or through other modules; ${tests.length} test files were read (${tests.slice(0, 3).join(", ")}${tests.length > 3 ? ", …" : ""}). Pass --tests <globs> naming the tests that exercise them${input.maxHops != null ? `, or a larger --max-hops than ${input.maxHops}` : ""}`,
      "--tests",
    );
  }
  return { config: input.config, tests, roots, exclude, globs, edges: input.edges ?? "uses" };
}
