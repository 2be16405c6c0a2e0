import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { execa } from "execa";
import { normalizePackage } from "../../core/task-environment.js";
import { HarnessError } from "../errors.js";
import { treeFile, type DeclaredRequirement, type TreeContext } from "./tree-requirements.js";

/** The [project] table's parts that say what to install (PEP 621). */
export interface ProjectTable {
  name?: unknown;
  dependencies?: unknown;
  "optional-dependencies"?: unknown;
  dynamic?: unknown;
}

// tomllib (Python 3.11+) parses; nothing of the project is imported or built, so no build backend
// of the repository runs outside the sandbox.
const READ = "import json, sys, tomllib\nd = tomllib.load(open(sys.argv[1], 'rb'))\np = d.get('project')\nprint(json.dumps(None if not isinstance(p, dict) else {k: p.get(k) for k in ('name', 'dependencies', 'optional-dependencies', 'dynamic')}))";

/** What a [project] table does not say, statically, for the engine to install. */
export class ProjectTableProblem extends Error {}

const strings = (v: unknown): string[] | null => (Array.isArray(v) && v.every((s) => typeof s === "string") ? (v as string[]) : null);

/**
 * The requirements of a [project] table: its dependencies and those of the extras named, an
 * extra that names the project itself (`all = ["pkg[test,docs]"]`) expanded into those extras.
 * Pure. Throws a ProjectTableProblem for a table that does not say, statically, what it needs.
 */
export function projectRequirements(project: ProjectTable | null, extras: readonly string[], file: string): DeclaredRequirement[] {
  if (!project) throw new ProjectTableProblem(`${file} has no [project] table`);
  const dynamic = strings(project.dynamic) ?? [];
  if (dynamic.includes("dependencies")) throw new ProjectTableProblem(`${file} lists dependencies in project.dynamic: its build backend computes them, and the engine runs none of the repository's code outside the sandbox. Name the requirement files they come from in environment.fromTree.requirements instead`);
  const optional = (project["optional-dependencies"] ?? {}) as Record<string, unknown>;
  const self = typeof project.name === "string" ? normalizePackage(project.name) : null;
  const out: DeclaredRequirement[] = [];
  const done = new Set<string>();
  const add = (list: unknown, where: string) => {
    for (const text of strings(list) ?? []) {
      const m = /^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?/.exec(text);
      if (!m) throw new ProjectTableProblem(`${where}: cannot read '${text}' as a requirement`);
      if (self && normalizePackage(m[1] as string) === self) {
        for (const extra of (m[2] ?? "").split(",").map((e) => e.trim()).filter(Boolean)) take(extra, where);
        continue;
      }
      out.push({ name: m[1] as string, text: text.trim(), file: where, line: null });
    }
  };
  const take = (extra: string, from: string) => {
    const key = normalizePackage(extra);
    if (done.has(key)) return;
    done.add(key);
    const found = Object.keys(optional).find((k) => normalizePackage(k) === key);
    if (found === undefined) throw new ProjectTableProblem(`${from} names the extra '${extra}', which ${file} does not define (it has ${Object.keys(optional).join(", ") || "none"})`);
    add(optional[found], `${file} [project.optional-dependencies] ${found}`);
  };
  if (project.dependencies !== undefined && !strings(project.dependencies)) throw new ProjectTableProblem(`${file}: project.dependencies is not a list of strings`);
  add(project.dependencies, `${file} [project] dependencies`);
  for (const extra of extras) take(extra, "environment.fromTree.pyproject.extras");
  return out;
}

/**
 * Reads the pyproject.toml a gate declares (environment.fromTree.pyproject) from the tree with
 * `python` (3.11+, for tomllib): its requirements and the sha256 of its bytes. A file the tree
 * lacks, one that does not parse, or dependencies it does not state are HarnessErrors naming the
 * file and the task's field.
 */
export async function readPyproject(ctx: TreeContext, rel: string, extras: readonly string[], python: string): Promise<{ requirements: DeclaredRequirement[]; file: { path: string; sha256: string } } | null> {
  const field = `environment.fromTree.pyproject (${ctx.declaredIn})`;
  const fail = (why: string) => new HarnessError(`${why} (${field}); no test or probe was run.`, "environment");
  const path = treeFile(ctx, rel);
  if (!path) {
    if (ctx.lenient) return null;
    throw fail(`${rel} is not in ${ctx.label}: the gate builds its environment from what the base declares. Fix the task, or evaluate against a base that has it`);
  }
  const bytes = readFileSync(path);
  const r = await execa(python, ["-I", "-c", READ, path], { reject: false, timeout: 30_000, extendEnv: false, env: { PYTHONDONTWRITEBYTECODE: "1" } });
  if (r.exitCode !== 0) {
    if (ctx.lenient) return null;
    const last = String(r.stderr).trim().split("\n").at(-1) ?? "";
    throw fail(/No module named 'tomllib'/.test(last) ? `reading ${rel} needs Python 3.11 or later (tomllib); ${python} is older: narrow environment.python` : `${rel} of ${ctx.label} does not parse as TOML: ${last}`);
  }
  try {
    const requirements = projectRequirements(JSON.parse(String(r.stdout)) as ProjectTable | null, extras, rel);
    const excluded = new Set(ctx.exclude.map(normalizePackage));
    return { requirements: requirements.filter((q) => !excluded.has(normalizePackage(q.name))), file: { path: rel, sha256: createHash("sha256").update(bytes).digest("hex") } };
  } catch (e) {
    if (!(e instanceof ProjectTableProblem)) throw e;
    if (ctx.lenient) return null;
    throw fail(`${e.message} (in ${ctx.label})`);
  }
}
