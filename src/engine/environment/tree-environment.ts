import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TreeEnvironment } from "../../core/task-environment.js";
import { HarnessError } from "../errors.js";
import { chooseBase, obtainEnvironment, type BuiltEnvironment, type EnsureOptions, type LockSource, type PreparedLock } from "./build-environment.js";
import { locatedProblems, parseLock, requirementNamedIn, uvErrorSummary } from "./lock-file.js";
import { readPyproject } from "./pyproject-requirements.js";
import { asLockRequirements, compileInputs, whereDeclared, type CompileInputs, type TaskPins } from "./tree-inputs.js";
import { headDeclaresMore, parseRequirementLines, readTreeRequirements, type TreeContext, type TreeRequirements } from "./tree-requirements.js";
import { findUv, runUv } from "./uv.js";

/** What to build for a repository gate whose environment follows its repository (environment.fromTree). */
export interface TreeEnvironmentRequest {
  /** The tree its requirements are read from: the merge base's (the workspace's `prBase.dir`), or `env build --tree`. */
  treeDir: string;
  /** How messages name that tree: "the merge base 1a2b3c4d5e6f", "--tree ../Megatron-LM". */
  treeLabel: string;
  /** Recorded in the manifest: the merge base's SHA, or the folder. */
  from: string;
  fromTree: TreeEnvironment;
  /** The task's lock, whose requirements are pins that win over the tree's; null: fromTree.pins only. */
  pinsLock: { file: string; label: string } | null;
  /** The interpreter range (environment.python). */
  python: string;
  /** The task file, for messages naming a field. */
  declaredIn: string;
  /** The PR's head: what it declares beyond the base is noted in the progress lines, never installed. */
  headDir?: string;
}

/** The declared files of the tree, read: requirement files (with their -r and -c files) and the pyproject's requirements. */
async function readDeclared(ctx: TreeContext, fromTree: TreeEnvironment, python: string): Promise<TreeRequirements> {
  const read = readTreeRequirements(ctx, fromTree.requirements);
  if (fromTree.pyproject) {
    const p = await readPyproject(ctx, fromTree.pyproject.path, fromTree.pyproject.extras, python);
    if (p) {
      read.requirements.push(...p.requirements);
      read.files.push(p.file);
    }
  }
  return read;
}

function taskPins(req: TreeEnvironmentRequest): TaskPins {
  const pins: TaskPins = { requirements: [], options: [] };
  if (req.pinsLock) {
    const text = readFileSync(req.pinsLock.file, "utf8");
    // Hashes are left out: uv compiles the pins afresh with the index's hashes, the tree's packages beside them.
    for (const r of parseLock(text).requirements) pins.requirements.push({ name: r.name, text: r.text, file: req.pinsLock.label, line: r.line });
    for (const l of parseRequirementLines(text)) if (l.kind === "option") pins.options.push(l.text);
  }
  for (const p of req.fromTree.pins) pins.requirements.push({ name: p.split(/[\s[<>=!~;]/)[0] as string, text: p, file: `environment.fromTree.pins in ${req.declaredIn}`, line: null });
  return pins;
}

/**
 * The environment a gate's tree declares, built once per runner for each distinct set of inputs
 * (what the tree's files declare, the task's pins and exclusions, the python range): found in the
 * store (no uv call) when built before, else compiled into a hash-checked lock with `uv pip compile
 * --universal --generate-hashes` (the task's pins as overrides, so they win) and built from it as a
 * task's own lock is. A declared file the tree lacks, or a requirement uv cannot resolve, is a
 * HarnessError (phase "environment") naming the file, its line and the task's field.
 */
export async function ensureTreeEnvironment(req: TreeEnvironmentRequest, opts: EnsureOptions = {}): Promise<BuiltEnvironment> {
  const t0 = performance.now();
  const progress = opts.onProgress ?? (() => {});
  const base = await chooseBase(req.python, req.declaredIn);
  const ctx: TreeContext = { dir: req.treeDir, label: req.treeLabel, declaredIn: req.declaredIn, exclude: req.fromTree.exclude };
  const tree = await readDeclared(ctx, req.fromTree, base.path);
  if (req.headDir) {
    const head = await readDeclared({ ...ctx, dir: req.headDir, label: "the PR's head", lenient: true }, req.fromTree, base.path);
    const { added, changed } = headDeclaresMore(tree.requirements, head.requirements);
    // The base's environment, not the union: what a PR adds is the agent's input, and resolving it would run its packages' builds outside the sandbox.
    if (added.length) progress(`the head declares requirements its merge base does not, not installed (the environment follows the merge base): ${added.join(", ")}`);
    if (changed.length) progress(`the head changes requirements; the environment keeps the merge base's: ${changed.join(", ")}`);
  }
  const pins = taskPins(req);
  const inputs = compileInputs(tree, pins, req.fromTree, { range: req.python, version: base.version });
  const files = [...req.fromTree.requirements, ...(req.fromTree.pyproject ? [`${req.fromTree.pyproject.path}${req.fromTree.pyproject.extras.length ? `[${req.fromTree.pyproject.extras.join(",")}]` : ""}`] : [])];
  const label = `fromTree: ${files.join(", ")}${req.pinsLock ? ` + ${req.pinsLock.label}` : ""}${req.fromTree.pins.length ? ` + ${req.fromTree.pins.length} pins` : ""}`;
  const source: LockSource = { label, prepare: (scratch, say) => compileLock({ req, tree, pins, inputs, python: base.path, timeoutS: opts.timeoutS ?? 1800 }, scratch, say) };
  const got = await obtainEnvironment(`tree-${inputs.inputHash.slice(0, 16)}-py${base.version}`, source, base, opts);
  return { ...got, seconds: (performance.now() - t0) / 1000 };
}

/** Compiles the inputs into `scratch/requirements.lock` (called only when the environment is built). */
async function compileLock(job: { req: TreeEnvironmentRequest; tree: TreeRequirements; pins: TaskPins; inputs: CompileInputs; python: string; timeoutS: number }, scratch: string, progress: (line: string) => void): Promise<PreparedLock> {
  const { req, tree, pins, inputs } = job;
  const written: string[] = [];
  const put = (name: string, text: string) => {
    writeFileSync(join(scratch, name), text);
    written.push(join(scratch, name));
  };
  put("tree.in", inputs.tree);
  put("pins.in", inputs.pins);
  // Relative names, run in scratch: uv's annotations ("# via -r tree.in") then name no build folder, and the lock's bytes do not vary by where it was compiled.
  const args = ["pip", "compile", "--universal", "--generate-hashes", "--no-header", "--python", job.python, "--python-version", inputs.pythonVersion, "tree.in", "pins.in"];
  if (pins.requirements.length) args.push("--overrides", "pins.in");
  if (inputs.constraints) {
    put("constraints.txt", inputs.constraints);
    args.push("-c", "constraints.txt");
  }
  if (inputs.excludes) {
    put("excludes.txt", inputs.excludes);
    args.push("--excludes", "excludes.txt");
  }
  args.push("-o", "requirements.lock");
  progress(`compiling a lock from ${req.treeLabel}: ${tree.requirements.length} requirements of ${tree.files.map((f) => f.path).join(", ")}, ${pins.requirements.length} pins of the task (uv pip compile --universal, python ${inputs.pythonVersion})`);
  const r = await runUv(findUv(), args, progress, job.timeoutS, scratch);
  if (r.exitCode !== 0) {
    const declared = [...tree.requirements, ...tree.constraints, ...pins.requirements];
    const named = requirementNamedIn(r.stderr, asLockRequirements(declared));
    const what = named ? declared[named.line] : undefined;
    throw new HarnessError(
      `no environment could be resolved from ${req.treeLabel}'s requirements (environment.fromTree in ${req.declaredIn})${what ? `: ${whereDeclared(what)}` : ""}: ${uvErrorSummary(r.stderr)}. Fix the task's pins or exclude (a pin wins over the tree's requirement on its package); no test or probe was run.`,
      "environment",
    );
  }
  const file = join(scratch, "requirements.lock");
  const bytes = readFileSync(file);
  const lock = parseLock(bytes.toString("utf8"));
  if (lock.problems.length) {
    throw new HarnessError(`the lock compiled from ${req.treeLabel} cannot be built: ${locatedProblems("requirements.lock", lock.problems).join("; ")}. Exclude the package (environment.fromTree.exclude in ${req.declaredIn}) or pin it; no test or probe was run.`, "environment");
  }
  return {
    file,
    bytes,
    lock,
    keep: [file, ...written],
    tree: { inputHash: inputs.inputHash, from: req.from, files: tree.files, pins: pins.requirements.map((p) => p.text), exclude: req.fromTree.exclude, pythonVersion: inputs.pythonVersion },
  };
}
