import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import type { Upstream } from "../../core/mutants/mutants-file.js";
import { mutantId } from "../../core/mutants/mutants-file.js";
import type { GeneratedMutant } from "../../core/mutants/mutants-score.js";
import { InputError } from "../errors.js";
import { git } from "../git.js";
import type { LoadedTask } from "../task-load.js";
import { lineOf, runGenerator, type Generation } from "./generate-mutants.js";

/** A mutant of the gated subsystem, as the commit on top of the pinned upstream commit that a gate evaluates as a PR. */
export interface GateMutant extends GeneratedMutant {
  sha: string;
}

/** The mutants of a gate, in a scratch repository that holds each as a commit. */
export interface GateGeneration extends Generation {
  mutants: GateMutant[];
  /** A bare clone of the upstream repository with a commit per mutant (and the reference's). */
  repo: string;
  commit: string;
  /**
   * The reference: the pinned commit with one comment line appended to each mutated file. It
   * changes the same paths as every mutant (so a gate selects the same tests and probes) and no
   * behaviour: a gate that does not resolve it would reject any PR there, and its mutants measure nothing.
   */
  reference: { sha: string; diff: string };
  dispose: () => void;
}

const REFERENCE_LINE = "# probegate validate --mutants: the unchanged reference\n";

/** `upstream.repo` (relative to the task folder) or `--repo`, as git can clone it. */
export function upstreamRepo(task: LoadedTask, upstream: Upstream, flag: string | undefined): string {
  const raw = flag ?? upstream.repo;
  if (!raw) {
    throw new InputError(`${task.dir}/mutants.yml: upstream.repo: a repository gate's mutants change its upstream repository; name it there (a path relative to the task folder, or a git URL) or pass --repo <path or URL>`, { file: join(task.dir, "mutants.yml"), field: "upstream.repo" });
  }
  if (/^[a-z+]+:\/\//.test(raw) || raw.includes("@")) return raw;
  const path = flag !== undefined || isAbsolute(raw) ? resolve(raw) : resolve(task.dir, raw);
  if (!existsSync(path)) throw new InputError(`${flag !== undefined ? "--repo" : `${task.dir}/mutants.yml: upstream.repo`}: no repository at ${path}`, { field: flag !== undefined ? "--repo" : "upstream.repo" });
  return path;
}

/** A commit on top of `parent` whose only change is `files` (path → new text): blobs and a tree through a private index, no work tree. */
async function commitOnTop(repo: string, parent: string, files: Record<string, string>, message: string, index: string): Promise<string> {
  const env = { GIT_INDEX_FILE: index };
  await git(repo, ["--git-dir", repo, "read-tree", parent], { env });
  for (const [path, text] of Object.entries(files)) {
    const blob = await git(repo, ["--git-dir", repo, "hash-object", "-w", "--stdin"], { input: text });
    const mode = (await git(repo, ["--git-dir", repo, "ls-tree", parent, "--", path])).split(/\s/)[0] || "100644";
    await git(repo, ["--git-dir", repo, "update-index", "--cacheinfo", `${mode},${blob},${path}`], { env });
  }
  const tree = await git(repo, ["--git-dir", repo, "write-tree"], { env });
  return git(repo, ["--git-dir", repo, "commit-tree", tree, "-p", parent, "-m", message]);
}

/**
 * Makes the mutants of a repository gate: clones `repoUrl`, reads `upstream.paths` at the pinned
 * commit, and mutates their lines (only those of `upstream.functions` when given) with the default
 * operators and the value-keeping time, memory and traffic ones. Each mutant becomes a commit on
 * top of the pinned commit, so the gate evaluates it exactly as it evaluates a PR (the pinned
 * commit is its base). Only generation: nothing of the gate runs here.
 */
export async function generateGateMutants(task: LoadedTask, upstream: Upstream, repoUrl: string, python: string): Promise<GateGeneration> {
  const scratch = mkdtempSync(join(tmpdir(), `probegate-gate-mutants-${task.spec.id}-`));
  const dispose = () => rmSync(scratch, { recursive: true, force: true });
  const file = join(task.dir, "mutants.yml");
  try {
    const repo = join(scratch, "upstream.git");
    await git(scratch, ["clone", "--quiet", "--bare", "--no-tags", repoUrl, repo], { onError: (e) => new InputError(`upstream.repo: cannot clone ${repoUrl}: ${e.split("\n")[0]}`, { file, field: "upstream.repo" }) });
    const commit = upstream.commit;
    await git(repo, ["--git-dir", repo, "rev-parse", "--verify", `${commit}^{commit}`], { onError: () => new InputError(`${file}: upstream.commit: ${commit} is not a commit of ${repoUrl} (fetch it into that repository, or pin one it has)`, { file, field: "upstream.commit" }) });
    const sources = new Map<string, string>();
    for (const [i, path] of upstream.paths.entries()) {
      const text = await git(repo, ["--git-dir", repo, "show", `${commit}:${path}`], { onError: () => new InputError(`${file}: upstream.paths[${i}]: ${path} is not a file at ${commit.slice(0, 12)}`, { file, field: `upstream.paths[${i}]` }) });
      sources.set(path, `${text}\n`);
    }
    const raw = await runGenerator(python, [...sources].map(([path, source]) => ({ path, source, lines: source.split("\n").map((_, n) => n + 1), functions: upstream.functions })), "gate", upstream.operators);
    if (raw.functionsMissing?.length) {
      throw new InputError(`${file}: upstream.functions: ${raw.functionsMissing.join(", ")} ${raw.functionsMissing.length === 1 ? "is" : "are"} defined in none of upstream.paths at ${commit.slice(0, 12)}`, { file, field: "upstream.functions" });
    }
    const index = join(scratch, "index");
    const mutants: GateMutant[] = [];
    for (const m of raw.mutants) {
      const id = mutantId(m);
      const sha = await commitOnTop(repo, commit, { [m.path]: m.source }, `probegate mutant ${id}`, index);
      const diff = await git(repo, ["--git-dir", repo, "diff", "--no-color", "--no-ext-diff", commit, sha]);
      const original = sources.get(m.path) as string;
      mutants.push({ id, operator: m.operator, path: m.path, line: m.line, column: m.column, occurrence: m.occurrence, diff: `${diff}\n`, sha, change: { before: lineOf(original, m.line), after: lineOf(m.source, m.line) } });
    }
    const refFiles = Object.fromEntries([...sources].map(([path, source]) => [path, `${source.replace(/\n*$/, "\n")}${REFERENCE_LINE}`]));
    const refSha = await commitOnTop(repo, commit, refFiles, "probegate validate --mutants: the reference", index);
    const refDiff = await git(repo, ["--git-dir", repo, "diff", "--no-color", "--no-ext-diff", commit, refSha]);
    const files = [...sources].map(([path]) => ({ path, lines: [...new Set(raw.mutants.filter((m) => m.path === path).map((m) => m.line))].sort((a, b) => a - b) }));
    return { mutants, operators: raw.operators.length, invalid: raw.invalid, duplicate: raw.duplicate, files, repo, commit, reference: { sha: refSha, diff: `${refDiff}\n` }, dispose };
  } catch (e) {
    dispose();
    throw e;
  }
}
