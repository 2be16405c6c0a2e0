import { createHash } from "node:crypto";
import type { TreeEnvironment } from "../../core/task-environment.js";
import type { LockRequirement } from "./lock-file.js";
import type { DeclaredRequirement, TreeRequirements } from "./tree-requirements.js";

/** Bumped when what is handed to uv changes meaning (flags, file layout): every tree environment is then built anew. */
export const TREE_RECIPE = "probegate-tree-env/1";

/** The task's pins: its lock's requirements (without hashes) and options, and fromTree.pins. */
export interface TaskPins {
  requirements: DeclaredRequirement[];
  /** The lock's file-wide options (--index-url, --find-links …): they apply to the whole compile. */
  options: string[];
}

/** The files `uv pip compile` reads, as text, and the key of the environment they make. */
export interface CompileInputs {
  /** tree.in: what the tree declares (after `exclude`), one block per file read. */
  tree: string;
  /** pins.in: the task's pins, given to uv both as requirements and as overrides. */
  pins: string;
  /** constraints.txt: the tree's `-c` files' requirements ("" when none). */
  constraints: string;
  /** excludes.txt: fromTree.exclude, one name a line ("" when none). */
  excludes: string;
  /** The --python-version compiled for: the base interpreter's major.minor. */
  pythonVersion: string;
  /** sha256 of all of the above, the recipe and the task's python range: the environment's key. */
  inputHash: string;
}

function block(reqs: readonly DeclaredRequirement[]): string[] {
  const out: string[] = [];
  let file: string | null = null;
  for (const r of reqs) {
    if (r.file !== file) out.push(`# ${(file = r.file)}`);
    out.push(r.text);
  }
  return out;
}

const text = (lines: readonly string[]) => (lines.length ? `${lines.join("\n")}\n` : "");

/**
 * What uv is given for a tree environment, and its key. Pure. The key is of what the tree's files
 * declare (their requirements and options, in order), not of their bytes: a comment edited in a
 * requirements file makes no new environment, a requirement changed does. The bytes' hashes are
 * recorded in the manifest beside it.
 */
export function compileInputs(tree: TreeRequirements, pins: TaskPins, fromTree: TreeEnvironment, python: { range: string; version: string }): CompileInputs {
  const pythonVersion = python.version.split(".").slice(0, 2).join(".");
  const parts = {
    tree: text([...tree.options, ...block(tree.requirements)]),
    pins: text([...pins.options, ...pins.requirements.map((r) => r.text)]),
    constraints: text(block(tree.constraints)),
    excludes: text(fromTree.exclude),
  };
  const inputHash = createHash("sha256")
    .update(JSON.stringify({ recipe: TREE_RECIPE, python: python.range, pythonVersion, ...parts }))
    .digest("hex");
  return { ...parts, pythonVersion, inputHash };
}

/**
 * The declared requirements as a lock's requirements (an index for its line), so `requirementNamedIn`
 * can find the one uv's resolver error names.
 */
export function asLockRequirements(reqs: readonly DeclaredRequirement[]): LockRequirement[] {
  return reqs.map((r, i) => {
    const pin = /==\s*([^\s;,]+)/.exec(r.text);
    return { name: r.name, text: r.text, version: pin ? (pin[1] as string) : null, hashes: 0, line: i };
  });
}

/** "requirements.txt:3 (six==99)" or "the task's pin pytest==99 (environment.fromTree.pins)": where a requirement is declared. */
export function whereDeclared(r: DeclaredRequirement): string {
  return r.line === null ? `${r.text} (${r.file})` : `${r.file}:${r.line} (${r.text})`;
}
