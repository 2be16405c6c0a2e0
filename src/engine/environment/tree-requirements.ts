import { createHash } from "node:crypto";
import { existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { normalizePackage } from "../../core/task-environment.js";
import { HarnessError } from "../errors.js";

/** One requirement a repository declares, with where (for the error that names it and the head's note). */
export interface DeclaredRequirement {
  /** The project name as written (typing_extensions). */
  name: string;
  /** The requirement without comments or options (pyyaml==6.0.2 ; python_version < '3.13'). */
  text: string;
  /** Where it is declared: a file of the tree, or a pyproject table ("pyproject.toml [project] dependencies"). */
  file: string;
  /** 1-based line where it starts; null where the source has none (a pyproject array entry). */
  line: number | null;
}

/** What a tree declares: requirements, constraints (`-c` files), index options, and every file read. */
export interface TreeRequirements {
  requirements: DeclaredRequirement[];
  constraints: DeclaredRequirement[];
  /** File-wide options uv reads in a requirements file (--index-url, --find-links, --no-binary …), in order. */
  options: string[];
  /** Each file read, declared or named by `-r`/`-c`, with the sha256 of its bytes. */
  files: Array<{ path: string; sha256: string }>;
}

/** One logical line of a requirements file, classified. */
export type RequirementLine =
  | { kind: "requirement"; name: string; text: string; line: number }
  | { kind: "include"; path: string; constraint: boolean; line: number }
  | { kind: "option"; text: string; line: number }
  /** An editable, a local path or a direct URL: nothing an index resolves by name (`name` when it says `name @ url`). */
  | { kind: "local"; name: string | null; text: string; line: number };

const NAME = /^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$/s;

function stripComment(line: string): string {
  // A comment starts at a '#' that begins the line or follows whitespace (a URL fragment does not).
  const m = /(^|\s)#/.exec(line);
  return m ? line.slice(0, m.index) : line;
}

/** Splits a requirements file (pip's format: `\` continues a line, `#` comments) into classified lines. Pure. */
export function parseRequirementLines(text: string): RequirementLine[] {
  const out: RequirementLine[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = i + 1;
    let logical = stripComment(lines[i] as string);
    while (logical.trimEnd().endsWith("\\") && i + 1 < lines.length) logical = `${logical.trimEnd().slice(0, -1)} ${stripComment(lines[++i] as string)}`;
    const body = logical.trim().replace(/\s+/g, " ");
    if (!body) continue;
    const include = /^(-r|--requirement|-c|--constraint)(?:\s*=\s*|\s+)(\S+)$/.exec(body);
    if (include) {
      out.push({ kind: "include", path: include[2] as string, constraint: include[1] === "-c" || include[1] === "--constraint", line });
      continue;
    }
    if (/^(-e|--editable)\b/.test(body)) {
      out.push({ kind: "local", name: null, text: body, line });
      continue;
    }
    if (body.startsWith("-")) {
      out.push({ kind: "option", text: body, line });
      continue;
    }
    const m = NAME.exec(body);
    const rest = (m?.[3] ?? "").trim();
    if (m && rest.startsWith("@")) {
      out.push({ kind: "local", name: m[1] as string, text: body, line });
    } else if (!m || /^(\.|\/|~)/.test(body) || /^[a-z+]+:\/\//i.test(body) || /\.(whl|zip|tar\.gz)$/.test(body)) {
      out.push({ kind: "local", name: null, text: body, line });
    } else {
      out.push({ kind: "requirement", name: m[1] as string, text: body, line });
    }
  }
  return out;
}

/** How messages name the tree and the task: "the merge base 1a2b3c4d5e6f", "tasks/x/task.yml". */
export interface TreeContext {
  /** The tree's root folder. */
  dir: string;
  /** The tree, as messages name it. */
  label: string;
  /** The task file, for "(environment.fromTree.requirements in <file>)". */
  declaredIn: string;
  /** Package names never installed (environment.fromTree.exclude). */
  exclude: readonly string[];
  /** Skip what cannot be read instead of refusing it (reading the PR's head, for a note only). */
  lenient?: boolean;
}

function fail(message: string): HarnessError {
  return new HarnessError(message, "environment");
}

/**
 * The file `rel` of the tree (null: there is none), refusing one outside it: a symlink or `..` out
 * of the repository (leniently, for the head, it counts as none: the head cannot make the gate fail).
 */
export function treeFile(ctx: TreeContext, rel: string): string | null {
  const path = resolve(ctx.dir, rel);
  if (!existsSync(path) || !statSync(path).isFile()) return null;
  const root = realpathSync(ctx.dir);
  const real = realpathSync(path);
  if (real === root || real.startsWith(root + sep)) return path;
  if (ctx.lenient) return null;
  throw fail(`${rel} leads outside the repository (to ${real}); a gate's environment reads only the repository's own files.`);
}

/**
 * Reads the requirement files a gate declares (environment.fromTree.requirements) from the tree,
 * following their `-r` and `-c` files. A declared file the tree lacks, a `-r` that names none, and
 * a line no index can resolve by name (an editable, a path, a URL) are HarnessErrors naming the
 * file, the line and the task's field: the base's or the task's problem, never the PR's. Packages
 * in `exclude` are dropped wherever they are declared.
 */
export function readTreeRequirements(ctx: TreeContext, declared: readonly string[]): TreeRequirements {
  const out: TreeRequirements = { requirements: [], constraints: [], options: [], files: [] };
  const excluded = new Set(ctx.exclude.map(normalizePackage));
  const seen = new Set<string>();
  const visit = (rel: string, constraint: boolean, from: { file: string; line: number } | null) => {
    const path = treeFile(ctx, rel);
    if (!path) {
      if (ctx.lenient) return;
      throw fail(
        from
          ? `${from.file}:${from.line} names ${rel}, which is not in ${ctx.label}: fix the repository's requirement files, or leave ${from.file} out of environment.fromTree.requirements (${ctx.declaredIn}); no test or probe was run.`
          : `${rel} is not in ${ctx.label} (environment.fromTree.requirements in ${ctx.declaredIn}): the gate builds its environment from what the base declares. Fix the task's list, or evaluate against a base that has the file; no test or probe was run.`,
      );
    }
    const key = relative(ctx.dir, path);
    if (seen.has(key)) return;
    seen.add(key);
    const bytes = readFileSync(path);
    out.files.push({ path: key, sha256: createHash("sha256").update(bytes).digest("hex") });
    for (const l of parseRequirementLines(bytes.toString("utf8"))) {
      if (l.kind === "include") visit(join(dirname(key), l.path), constraint || l.constraint, { file: key, line: l.line });
      else if (l.kind === "option") out.options.push(l.text);
      else if (l.kind === "requirement") {
        if (!excluded.has(normalizePackage(l.name))) (constraint ? out.constraints : out.requirements).push({ name: l.name, text: l.text, file: key, line: l.line });
      } else if (!(l.name && excluded.has(normalizePackage(l.name))) && !ctx.lenient) {
        throw fail(
          `${key}:${l.line}: '${l.text}' is ${/^(-e|--editable)/.test(l.text) ? "an editable install" : "a path or URL"}, which a gate's environment does not install: it holds packages from the index, and the workspace is the repository's own code. ${l.name ? `Add ${l.name} to environment.fromTree.exclude (${ctx.declaredIn}), or pin what it provides in fromTree.pins` : `Read the project's dependencies with environment.fromTree.pyproject instead (${ctx.declaredIn})`}; no test or probe was run.`,
        );
      }
    }
  };
  for (const rel of declared) visit(rel, false, null);
  return out;
}

/**
 * What the head declares that its merge base does not: requirements of a package the base does not
 * require, and ones whose text changed (pyyaml==6.0.2 → pyyaml==6.0.3), as "name (file)" lines. The
 * environment follows the base, so these are not installed; the log says so.
 */
export function headDeclaresMore(base: readonly DeclaredRequirement[], head: readonly DeclaredRequirement[]): { added: string[]; changed: string[] } {
  const baseBy = new Map<string, string[]>();
  for (const r of base) baseBy.set(normalizePackage(r.name), [...(baseBy.get(normalizePackage(r.name)) ?? []), r.text]);
  const added: string[] = [];
  const changed: string[] = [];
  for (const r of head) {
    const had = baseBy.get(normalizePackage(r.name));
    if (!had) added.push(`${r.text} (${r.file})`);
    else if (!had.includes(r.text)) changed.push(`${had.join(", ")} → ${r.text} (${r.file})`);
  }
  return { added: [...new Set(added)], changed: [...new Set(changed)] };
}
