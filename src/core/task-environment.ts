import { z } from "zod";

/** A comparator list such as ">=2.1", ">=2.1,<3" or "==2.11.0"; versions are dotted numbers. */
export const VERSION_RANGE = /^\s*(>=|<=|==|!=|>|<)\s*\d+(\.\d+)*\s*(,\s*(>=|<=|==|!=|>|<)\s*\d+(\.\d+)*\s*)*$/;

/**
 * Files the engine puts beside the workspace for a task whose real repository needs them (a pytest
 * plugin that maps the engine's rank settings onto the repository's, a compatibility shim). They
 * are the judge's, not the submission's: outside the workspace, read-only in the sandbox, first on
 * PYTHONPATH, and a workspace file of the same module name is removed before anything runs.
 */
export const SetupSchema = z.strictObject({
  path: z.string().min(1).describe("folder of setup files, relative to the task folder; put on PYTHONPATH before the workspace"),
  pytestPlugins: z
    .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/, "a Python module name, e.g. probegate_megatron"))
    .default([])
    .describe("modules of the setup folder loaded into the official pytest run with -p (no conftest.py needed)"),
  include: z
    .array(z.string().min(1))
    .default([])
    .describe("more folders of setup files, relative to the task folder, that tasks share (one CPU shim for two Megatron tasks); their files join those of path, and a file in two folders is an error"),
});
export type TaskSetup = z.infer<typeof SetupSchema>;

/**
 * What the runner must have for the task to mean anything. A runner without it ends the
 * evaluation in `error` naming the requirement and what the runner has, before any code runs:
 * never a wrong verdict from a task that cannot run there.
 */
export const RequiresSchema = z
  .strictObject({
    torch: z.string().regex(VERSION_RANGE, "a version range such as \">=2.1\" or \">=2.1,<3\"").optional().describe("torch version range"),
    gpus: z.number().int().min(1).max(64).optional().describe("NVIDIA GPUs the runner must give the job"),
    cuda: z.boolean().optional().describe("torch must be a CUDA build and see a GPU"),
  })
  .default({});
export type TaskRequires = z.infer<typeof RequiresSchema>;

/** A version range of the interpreter, as for torch: ">=3.11,<3.13", "==3.11". */
export const PYTHON_RANGE_DEFAULT = ">=3,<4";

/** A project name as PEP 508 writes it (torch, typing_extensions, megatron-core). */
const PACKAGE_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;

/** A path inside the repository, as its tree names it: relative, no `..`, no glob (each file is named). */
const treePath = z
  .string()
  .min(1)
  .refine((p) => !p.startsWith("/") && !p.split("/").includes("..") && !/[*?[\]{}]/.test(p), "a file of the repository, relative to its root, without '..' or globs, e.g. requirements/base.txt");

/**
 * A gate's environment that follows the repository: the requirements its PR's merge base declares
 * (requirement files, `pyproject.toml` dependencies and extras), with the task's pins over them,
 * compiled into a hash-checked lock with uv and built once per runner for each distinct set of
 * inputs. The merge base is known only once the workspace exists, so the build starts then.
 */
export const TreeEnvironmentSchema = z.strictObject({
  requirements: z
    .array(treePath)
    .default([])
    .describe("requirement files of the repository at the merge base (pip's format; their -r and -c files are read too), e.g. requirements/base.txt"),
  pyproject: z
    .strictObject({
      path: treePath.default("pyproject.toml").describe("the pyproject.toml, relative to the repository's root"),
      extras: z.array(z.string().regex(PACKAGE_NAME, "an extra's name, e.g. test")).default([]).describe("[project.optional-dependencies] extras installed beside [project] dependencies"),
    })
    .optional()
    .describe("the [project] dependencies of the repository's pyproject.toml (static ones: dependencies listed in project.dynamic are refused), with the extras named"),
  pins: z
    .array(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*\s*(\[[^\]]*\])?\s*([<>=!~][^;@]*)?(;[^@]*)?$/, "a requirement such as torch==2.15.0 or pytest>=8,<10 (no URL)"))
    .default([])
    .describe("requirements of the task's own that win over the tree's: each replaces every requirement on its package (a uv override) and is installed"),
  exclude: z
    .array(z.string().regex(PACKAGE_NAME, "a package name, e.g. flash-attn"))
    .default([])
    .describe("packages never installed, though the tree (or a dependency) requires them: those a CPU runner cannot build, or ones the task's commands never import"),
});
export type TreeEnvironment = z.infer<typeof TreeEnvironmentSchema>;

/**
 * The task's own Python environment: a pinned, hash-checked lock (pip-tools' requirements format,
 * as `uv pip compile --generate-hashes` writes it) and the interpreter range it is built for. The
 * engine builds a virtual environment from it once per runner (cached by the lock's content hash
 * and the interpreter's version) and runs `{python}` from it; without it, the runner's interpreter.
 * A repository gate may instead follow its repository (`fromTree`); the lock, if any, then holds the
 * task's pins, which win over the tree's.
 */
export const PythonEnvironmentSchema = z
  .strictObject({
    lock: z
      .string()
      .min(1)
      .refine((p) => !p.startsWith("/"), "a path relative to the task folder, e.g. environment/requirements.lock")
      .optional()
      .describe("the lock file, relative to the task folder: every requirement pinned (==) with --hash lines, as `uv pip compile --universal --generate-hashes` writes it. With fromTree: the task's pins, each winning over the tree's requirement on its package"),
    python: z
      .string()
      .regex(VERSION_RANGE, "a version range such as \">=3.11,<3.13\" or \"==3.11\"")
      .default(PYTHON_RANGE_DEFAULT)
      .describe("interpreter versions the lock is for; the engine picks a system interpreter in the range (/usr/bin/python3.X first)"),
    fromTree: TreeEnvironmentSchema.optional().describe("repository gates: build the environment from what the PR's merge base declares (requirement files, pyproject.toml), with the task's pins over it"),
  })
  .superRefine((env, ctx) => {
    if (!env.lock && !env.fromTree) ctx.addIssue({ code: "custom", path: ["lock"], message: "is required: name the lock file, or build the environment from the repository with fromTree" });
    const tree = env.fromTree;
    if (!tree) return;
    if (tree.requirements.length === 0 && !tree.pyproject) {
      ctx.addIssue({ code: "custom", path: ["fromTree"], message: "names nothing to read: list requirement files in fromTree.requirements, or set fromTree.pyproject" });
    }
    const pinned = new Set(tree.pins.map((p) => normalizePackage(p.split(/[\s[<>=!~;]/)[0] as string)));
    tree.exclude.forEach((name, i) => {
      if (pinned.has(normalizePackage(name))) ctx.addIssue({ code: "custom", path: ["fromTree", "exclude", i], message: `'${name}' is also in fromTree.pins: a package is either pinned by the task or never installed` });
    });
  });
export type PythonEnvironment = z.infer<typeof PythonEnvironmentSchema>;

/** PEP 503 normalisation: "Typing_Extensions" and "typing-extensions" are one project. */
export function normalizePackage(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, "-");
}

/** The inputs a lock compiled from a repository's tree was made of, for a person tracing an environment. */
export const TreeSourceSchema = z.strictObject({
  /** sha256 of everything uv was given (the requirements read from the tree, the pins, exclusions, python): the folder's key. */
  inputHash: z.string().regex(/^[0-9a-f]{64}$/),
  /** The commit (or folder) the first build read, e.g. the merge base's SHA. */
  from: z.string(),
  /** Each file read from the tree (declared ones and the -r/-c files they name), with the sha256 of its bytes. */
  files: z.array(z.strictObject({ path: z.string(), sha256: z.string().regex(/^[0-9a-f]{64}$/) })),
  /** The task's pins (environment.lock's requirements, fromTree.pins) as given to uv. */
  pins: z.array(z.string()),
  exclude: z.array(z.string()),
  /** The --python-version the lock was compiled for (it holds from that version up). */
  pythonVersion: z.string(),
});
export type TreeSource = z.infer<typeof TreeSourceSchema>;

/**
 * What a built environment's folder says about itself (`probegate-env.json`, written last, before
 * the folder is moved into place): an environment folder without it is not one.
 */
export const EnvironmentManifestSchema = z.strictObject({
  /** sha256 of the lock file's bytes. */
  lockHash: z.string().regex(/^[0-9a-f]{64}$/),
  /** The lock file it was built from, as the first task that built it named it (for people). */
  lockFile: z.string(),
  /** The base interpreter the venv runs on (a system interpreter). */
  interpreter: z.string(),
  python: z.string(),
  torch: z.string().nullable(),
  cuda: z.string().nullable(),
  uv: z.string(),
  builtAt: z.string(),
  buildS: z.number().min(0),
  /** Bytes of its files (hard links into uv's cache counted in full). */
  sizeBytes: z.number().int().min(0),
  packages: z.number().int().min(0),
  /**
   * Whether its packages' bytecode was compiled at the build (uv pip sync --compile-bytecode). The
   * sandbox cannot write `__pycache__`, so without it every process compiles what it imports
   * (torch: about 1.6 s of each rank's start-up). Absent: built before probegate compiled it.
   */
  bytecode: z.boolean().optional(),
  /** Where a compiled lock came from (environment.fromTree); absent: the task's own lock. */
  tree: TreeSourceSchema.optional(),
});
export type EnvironmentManifest = z.infer<typeof EnvironmentManifestSchema>;

/** What the engine found on the runner. */
export interface HostFacts {
  /** Whose interpreter torch was read from, for the message: default "the runner's Python". */
  pythonFrom?: string;
  torch: string | null;
  cuda: string | null;
  gpus: number;
}

function numbers(v: string): number[] {
  return (v.match(/^\d+(\.\d+)*/)?.[0] ?? "0").split(".").map(Number);
}

function compare(a: number[], b: number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/** Whether `version` (e.g. "2.11.0+cu130") is in `range` (e.g. ">=2.1,<3"). */
export function inVersionRange(version: string, range: string): boolean {
  const v = numbers(version);
  return range.split(",").every((part) => {
    const m = /^\s*(>=|<=|==|!=|>|<)\s*([\d.]+)\s*$/.exec(part);
    if (!m) return false;
    const c = compare(v, numbers(m[2] as string));
    switch (m[1]) {
      case ">=": return c >= 0;
      case "<=": return c <= 0;
      case "==": return c === 0;
      case "!=": return c !== 0;
      case ">": return c > 0;
      default: return c < 0;
    }
  });
}

/** Each requirement the runner does not meet, as "what is required (what the runner has)"; empty: all met. */
export function unmetRequirements(req: TaskRequires, host: HostFacts): string[] {
  const unmet: string[] = [];
  // Without an environment the wording stays the runner's (the demo's skip lines quote it).
  const from = host.pythonFrom;
  if (req.torch !== undefined) {
    if (host.torch === null) unmet.push(`torch ${req.torch} (${from ?? "the runner's Python"} has no torch)`);
    else if (!inVersionRange(host.torch, req.torch)) unmet.push(`torch ${req.torch} (${from ?? "the runner"} has torch ${host.torch})`);
  }
  if (req.cuda) {
    if (host.cuda === null) unmet.push(`cuda: true (${from ? `the torch of ${from}` : "the runner's torch"}${host.torch ? ` ${host.torch}` : ""} is not a CUDA build)`);
    else if (host.gpus === 0) unmet.push(`cuda: true (the runner's torch is built for CUDA ${host.cuda} but no GPU is given to the job)`);
  }
  if (req.gpus !== undefined && host.gpus < req.gpus) {
    unmet.push(`gpus: ${req.gpus} (the runner gives the job ${host.gpus} GPU${host.gpus === 1 ? "" : "s"})`);
  }
  return unmet;
}
