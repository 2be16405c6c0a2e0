import { spawn } from "node:child_process";
import { existsSync, realpathSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { pathMatcher } from "../core/app-config.js";
import type { TaskSpec } from "../core/task-spec.js";
import { InputError } from "../engine/errors.js";
import { git } from "../engine/git.js";

/** A repository to replay from: its git folder (for reading history) and what the engine clones. */
export interface ReplayRepo {
  gitDir: string;
  /** The work tree's top folder, or the git folder of a bare repository: `--submission <source>@<sha>`. */
  source: string;
}

/** One merged PR as the gate sees it: head = the (merge) commit, base = its first parent. */
export interface ReplayCommit {
  sha: string;
  parent: string;
  /** Committer date, ISO 8601. */
  date: string;
  title: string;
  /** From "(#1234)" at the end of the subject, or "Merge pull request #1234". */
  pr: number | null;
  /** Every path the commit changes against its first parent. */
  changed: string[];
}

/** Groups of globs ('!' excludes within its group); a path is watched when one group matches it. */
export type WatchedPaths = readonly (readonly string[])[];

const gitIn = (repo: ReplayRepo, args: readonly string[], onError?: (stderr: string) => Error) => git(repo.gitDir, ["--git-dir", repo.gitDir, "-c", "core.quotePath=false", ...args], { onError });

/**
 * `--repo`: a work tree's top folder, its `.git`, or a bare repository (a mirror). A folder inside a
 * work tree is refused: the engine clones what it is given, and git cannot clone a subfolder.
 */
export async function openRepo(path: string): Promise<ReplayRepo> {
  const abs = resolve(path);
  if (!existsSync(abs) || !statSync(abs).isDirectory()) throw new InputError(`--repo ${path}: no such folder.`, { field: "--repo" });
  const notRepo = () => new InputError(`--repo ${path}: not a git repository (give a clone's top folder or a bare mirror such as …/repo.git).`, { field: "--repo" });
  const gitDir = await git(abs, ["rev-parse", "--absolute-git-dir"], { onError: notRepo });
  if (realpathSync(gitDir) === realpathSync(abs)) return { gitDir, source: abs };
  const top = await git(abs, ["rev-parse", "--show-toplevel"], { onError: notRepo });
  if (realpathSync(top) !== realpathSync(abs)) throw new InputError(`--repo ${path}: a folder inside the work tree ${top}; give the work tree's top folder.`, { field: "--repo" });
  return { gitDir, source: abs };
}

/** The PR number a merge or squash commit's subject names, if any. */
export function prNumber(subject: string): number | null {
  const m = /\(#(\d+)\)\s*$/.exec(subject) ?? /^Merge pull request #(\d+)\b/.exec(subject);
  return m ? Number(m[1]) : null;
}

/**
 * The paths a gate watches, from its task.yml alone: each `official.select.fromPaths` entry's
 * globs (its '!' globs exclude within it), the always-run `select.tests` (a file or a folder), and
 * `official.files` (the tests the weakened-test guard compares).
 */
export function watchedPaths(spec: TaskSpec): string[][] {
  const select = spec.official.select;
  const groups: string[][] = (select?.fromPaths ?? []).map((e) => [...e.paths]);
  for (const t of select?.tests ?? []) {
    const file = (t.split("::")[0] ?? t).replace(/\/+$/, "");
    groups.push([file, `${file}/**`]);
  }
  if (spec.official.files.length) groups.push([...spec.official.files]);
  return groups;
}

/** Whether `path` is watched. */
export function watchedBy(paths: WatchedPaths): (path: string) => boolean {
  const matchers = paths.map((g) => pathMatcher(g));
  return (p) => matchers.some((m) => m(p));
}

/** The watched paths as one line, for messages. */
export function describeWatched(paths: WatchedPaths): string {
  return paths.map((g) => g.join(" ")).join(", ");
}

/** The title of a commit: its subject, or for "Merge pull request #N from …" the body's first line (the PR's title). */
async function titleOf(repo: ReplayRepo, sha: string, subject: string): Promise<string> {
  if (!/^Merge pull request #\d+/.test(subject)) return subject;
  const body = await gitIn(repo, ["log", "-1", "--format=%b", sha]);
  return body.split("\n").find((l) => l.trim())?.trim() ?? subject;
}

/** `--shas`: each resolved to a commit, in the order given, each once; its base is its first parent. */
export async function commitsFromShas(repo: ReplayRepo, shas: readonly string[]): Promise<ReplayCommit[]> {
  const out: ReplayCommit[] = [];
  for (const given of shas) {
    const sha = await gitIn(repo, ["rev-parse", "--verify", "--quiet", `${given}^{commit}`], () => new InputError(`--shas: ${given} is not a commit of ${repo.source}.`, { field: "--shas" }));
    if (out.some((c) => c.sha === sha)) continue;
    const parent = await gitIn(repo, ["rev-parse", "--verify", "--quiet", `${sha}^1`], () => new InputError(`--shas: ${given} (${sha.slice(0, 9)}) has no parent: a root commit is no PR, it has no base to compare with.`, { field: "--shas" }));
    const [date = "", subject = ""] = (await gitIn(repo, ["log", "-1", "--format=%cI%x1f%s", sha])).split("\x1f");
    const changed = (await gitIn(repo, ["diff", "--name-only", "--no-renames", parent, sha])).split("\n").filter(Boolean);
    out.push({ sha, parent, date, title: await titleOf(repo, sha, subject), pr: prNumber(subject), changed });
  }
  return out;
}

export interface HistoryQuery {
  /** A branch, tag or commit whose first-parent history is walked (default HEAD). */
  ref: string;
  /** Only commits committed on or after this date. */
  since?: string;
  /** At most this many (the newest). */
  count?: number;
  /** Only commits changing a watched path; null: every commit. */
  paths: WatchedPaths | null;
}

/** `--since`: a date Date.parse reads (2025-06-01, 2025-06-01T12:00Z), as ISO 8601 for git. */
export function parseSince(value: string): string {
  const t = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(t)) throw new InputError(`--since: expected a date like 2025-06-01 (or 2025-06-01T12:00:00Z), got '${value}'.`, { field: "--since" });
  return new Date(t).toISOString();
}

/** Streams `git log` records (header line, then changed paths) and stops it once `take` says so. */
async function walkLog(repo: ReplayRepo, args: readonly string[], take: (header: string, changed: string[]) => boolean): Promise<void> {
  const child = spawn("git", ["-c", "safe.directory=*", "--git-dir", repo.gitDir, "-c", "core.quotePath=false", ...args], { env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_TERMINAL_PROMPT: "0" }, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((ok) => child.on("close", (code) => ok(code)));
  let header: string | null = null;
  let changed: string[] = [];
  let stopped = false;
  const flush = () => {
    if (header !== null && !stopped && !take(header, changed)) stopped = true;
    header = null;
    changed = [];
  };
  for await (const line of createInterface({ input: child.stdout, crlfDelay: Infinity })) {
    if (line.startsWith("\x1e")) {
      flush();
      if (stopped) break;
      header = line.slice(1);
    } else if (line) changed.push(line);
  }
  if (stopped) child.kill();
  else flush();
  const code = await exited;
  if (!stopped && code !== 0) throw new InputError(`git log failed in ${repo.gitDir}: ${stderr.trim().split("\n")[0]}`);
}

/**
 * First-parent history of `q.ref`, newest first: each commit a PR merged (or pushed) onto it, its
 * base the first parent. Root commits are left out (no base). An empty selection is an error that
 * says which filter emptied it.
 */
export async function commitsFromHistory(repo: ReplayRepo, q: HistoryQuery): Promise<ReplayCommit[]> {
  const tip = await gitIn(repo, ["rev-parse", "--verify", "--quiet", `${q.ref}^{commit}`], () => new InputError(`--ref ${q.ref}: not a branch, tag or commit of ${repo.source}.`, { field: "--ref" }));
  const watched = q.paths ? watchedBy(q.paths) : null;
  const out: ReplayCommit[] = [];
  let seen = 0;
  const args = ["log", "--first-parent", "--diff-merges=first-parent", "--no-renames", "--name-only", "--format=%x1e%H%x1f%P%x1f%cI%x1f%s", ...(q.since ? [`--since=${q.since}`] : []), tip, "--"];
  await walkLog(repo, args, (header, changed) => {
    const [sha = "", parents = "", date = "", subject = ""] = header.split("\x1f");
    seen++;
    const parent = parents.split(" ")[0];
    if (parent && (!watched || changed.some(watched))) out.push({ sha, parent, date, title: subject, pr: prNumber(subject), changed });
    return q.count === undefined || out.length < q.count;
  });
  for (const c of out) c.title = await titleOf(repo, c.sha, c.title);
  if (out.length) return out;
  const where = `${q.ref} (${tip.slice(0, 9)}) in ${repo.source}`;
  if (seen === 0) throw new InputError(`no commits selected: no first-parent commit of ${where}${q.since ? ` since ${q.since.slice(0, 10)} (--since)` : ""}.`, { field: q.since ? "--since" : "--ref" });
  if (q.paths) throw new InputError(`no commits selected: none of the ${seen} first-parent commits of ${where}${q.since ? ` since ${q.since.slice(0, 10)}` : ""} changes a watched path (${describeWatched(q.paths)}); --paths <globs...> to watch others, --all-paths for every commit.`, { field: "--paths" });
  throw new InputError(`no commits selected: the ${seen} first-parent commits of ${where} are all root commits (no base).`, { field: "--ref" });
}
