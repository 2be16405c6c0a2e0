import { randomBytes } from "node:crypto";
import { existsSync, rmSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { execa } from "execa";
import { InputError } from "../engine/errors.js";
import { git } from "../engine/git.js";
import type { ReplayRepo } from "./gate-replay-history.js";

/** A regression to commit on top of each replayed PR: a patch file and the name the table shows. */
export interface Injection {
  name: string;
  patch: string;
}

/** `--inject`: each a .patch/.diff file; named after the file ("leaked-buffer.patch" → leaked-buffer). */
export function parseInjections(files: readonly string[]): Injection[] {
  const out = files.map((f) => {
    const patch = resolve(f);
    if (!existsSync(patch) || !statSync(patch).isFile()) throw new InputError(`--inject ${f}: no such patch file.`, { field: "--inject" });
    return { name: basename(patch).replace(/\.(patch|diff)$/, ""), patch };
  });
  const names = out.map((i) => i.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) throw new InputError(`--inject: two patches are named '${twice}'; rename one (the name keys its result files).`, { field: "--inject" });
  return out;
}

/**
 * A scratch bare repository sharing `repo`'s objects (`clone --shared`: nothing copied, nothing
 * written to `repo`): the injected commits live there, and the engine clones it like any other.
 */
export async function scratchRepo(repo: ReplayRepo, dir: string): Promise<ReplayRepo> {
  await git(dir, ["clone", "--quiet", "--bare", "--shared", "--no-tags", repo.gitDir, "scratch.git"]);
  const gitDir = join(dir, "scratch.git");
  return { gitDir, source: gitDir };
}

/** Fixed identity and dates: the same patch on the same commit is the same commit, so a replay resumes. */
const ENV = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "probegate replay",
  GIT_AUTHOR_EMAIL: "replay@localhost",
  GIT_COMMITTER_NAME: "probegate replay",
  GIT_COMMITTER_EMAIL: "replay@localhost",
  GIT_AUTHOR_DATE: "2000-01-01T00:00:00Z",
  GIT_COMMITTER_DATE: "2000-01-01T00:00:00Z",
};

/**
 * Commits `inj`'s patch on top of `sha` in the scratch repository, through an index of its own (no
 * work tree, so injections side by side do not meet); returns the new commit. A patch that does not
 * apply is an InputError naming the patch and the commit.
 */
export async function injectOnto(scratch: ReplayRepo, sha: string, inj: Injection): Promise<string> {
  const index = join(scratch.gitDir, `replay-index-${randomBytes(6).toString("hex")}`);
  const run = async (args: string[]) => {
    const r = await execa("git", ["-c", "safe.directory=*", "--git-dir", scratch.gitDir, ...args], { env: { ...ENV, GIT_INDEX_FILE: index }, reject: false });
    if (r.exitCode !== 0) throw new InputError(`--inject ${inj.name}: git ${args[0]} failed on ${sha.slice(0, 9)}: ${String(r.stderr).trim().split("\n").slice(0, 3).join(" ")}`, { field: "--inject" });
    return String(r.stdout).trim();
  };
  try {
    await run(["read-tree", sha]);
    await run(["apply", "--cached", inj.patch]);
    const tree = await run(["write-tree"]);
    return await run(["commit-tree", tree, "-p", sha, "-m", `inject ${inj.name}`]);
  } finally {
    rmSync(index, { force: true });
  }
}
