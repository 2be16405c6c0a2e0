/**
 * The repository tree `gate init` reads: one commit exported to a scratch folder (git archive; nothing
 * of it runs), its files, its Python sources and what its pyproject.toml says (read with tomllib, as
 * the engine reads it for an environment: no build backend runs).
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import type { ProjectTable } from "../environment/pyproject-requirements.js";
import { InputError } from "../errors.js";
import { exportTree, git } from "../git.js";
import { treeFiles } from "../repo-gate/base-trees.js";

export interface RepoTree {
  /** The exported tree. */
  dir: string;
  /** The commit read. */
  sha: string;
  paths: string[];
  /** path → text of every Python file (under 1 MiB: larger ones are generated, not imported code). */
  sources: Map<string, string>;
  /** pyproject.toml's [project] table and [tool.pytest] table; null where there is no pyproject.toml. */
  pyproject: { project: ProjectTable | null; pytest: Record<string, unknown> | null } | null;
}

const MAX_SOURCE = 1 << 20;
const READ_PYPROJECT = "import json, sys, tomllib\nd = tomllib.load(open(sys.argv[1], 'rb'))\nt = d.get('tool', {}).get('pytest')\np = d.get('project')\nprint(json.dumps({'project': p if isinstance(p, dict) else None, 'pytest': t if isinstance(t, dict) else None}, default=str))";

/** Reads pyproject.toml of `dir` with `python` (3.11+: tomllib); an InputError names a file that does not parse. */
export async function readPyprojectTables(dir: string, python: string): Promise<RepoTree["pyproject"]> {
  const file = join(dir, "pyproject.toml");
  if (!existsSync(file)) return null;
  const r = await execa(python, ["-I", "-c", READ_PYPROJECT, file], { reject: false, timeout: 30_000, extendEnv: false, env: { PYTHONDONTWRITEBYTECODE: "1" } });
  if (r.exitCode !== 0) {
    const last = String(r.stderr).trim().split("\n").at(-1) ?? "";
    throw new InputError(/No module named 'tomllib'/.test(last) ? `reading pyproject.toml needs Python 3.11 or later (tomllib); ${python} is older: pass --python` : `pyproject.toml does not parse as TOML: ${last}`, { file: "pyproject.toml" });
  }
  return JSON.parse(String(r.stdout)) as RepoTree["pyproject"];
}

/** Exports `ref` of `repo` (a local checkout or a URL git can clone) into `dest` and reads it. */
export async function readRepoTree(repo: string, ref: string, dest: string, scratch: string, python: string): Promise<RepoTree> {
  let sha: string;
  if (existsSync(repo) && statSync(repo).isDirectory()) {
    const fail = (stderr: string) => new InputError(`gate init: cannot read ${repo} at '${ref}': ${stderr.split("\n")[0]} (pass --ref <rev> naming a commit of it)`, { field: "--ref" });
    sha = await git(repo, ["rev-parse", "--verify", `${ref}^{commit}`], { onError: fail });
    const tar = await execa("git", ["-C", repo, "archive", "--format=tar", sha], { encoding: "buffer", reject: false });
    if (tar.exitCode !== 0) throw fail(Buffer.from(tar.stderr).toString());
    const untar = await execa("tar", ["-x", "-C", dest], { input: tar.stdout, reject: false });
    if (untar.exitCode !== 0) throw fail(String(untar.stderr));
  } else {
    sha = await exportTree(repo, ref, dest, scratch, "gate init");
  }
  const paths = treeFiles(dest).sort();
  const sources = new Map<string, string>();
  for (const p of paths) {
    if (!p.endsWith(".py")) continue;
    const full = join(dest, p);
    if (statSync(full).size <= MAX_SOURCE) sources.set(p, readFileSync(full, "utf8"));
  }
  return { dir: dest, sha, paths, sources, pyproject: await readPyprojectTables(dest, python) };
}
