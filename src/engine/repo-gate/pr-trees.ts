import { chmodSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { InputError } from "../errors.js";
import { git } from "../git.js";
import type { SubmissionSource } from "../submission.js";

/** The two commits of a repository gate's evaluation, read from one clone of the PR's repository. */
export interface PrCommits {
  /** The bare clone they were read from (in the evaluation's scratch folder). */
  gitDir: string;
  head: string;
  /** The base SHA the caller gave (`--pr-base`, the PR's `base.sha`). */
  asked: string;
  /**
   * What the head is compared with: the merge base of the asked base and the head, as GitHub's
   * "files changed" does. It equals `asked` unless the base branch moved on after the PR branched.
   */
  mergeBase: string;
}

/**
 * Clones the PR's repository once and resolves its head and base. Refuses, naming both commits, a
 * base that shares no history with the head (the wrong repository, or the SHAs swapped for an
 * unrelated pair).
 */
export async function resolvePrCommits(sub: SubmissionSource, prBase: string, scratch: string): Promise<PrCommits> {
  if (sub.kind !== "git") {
    throw new InputError(`--submission: a repository gate evaluates the PR's head as repo@sha (a git URL or path and the head commit), not a ${sub.kind}.`, { field: "--submission" });
  }
  const fail = (what: string) => (stderr: string) => new InputError(`${what}: cannot read ${sub.repo}: ${stderr.split("\n")[0]}`, { field: what });
  await git(scratch, ["clone", "--quiet", "--bare", "--no-tags", sub.repo, "pr.git"], { onError: fail("--submission") });
  const gitDir = join(scratch, "pr.git");
  const rev = (ref: string, what: string) => git(scratch, ["--git-dir", gitDir, "rev-parse", "--verify", `${ref}^{commit}`], { onError: () => new InputError(`${what}: '${ref}' is not a commit of ${sub.repo}.`, { field: what }) });
  const head = await rev(sub.ref, "--submission");
  const asked = await rev(prBase, "--pr-base");
  const mergeBase = await git(scratch, ["--git-dir", gitDir, "merge-base", asked, head], {
    onError: () => new InputError(`--pr-base ${asked.slice(0, 12)} and the head ${head.slice(0, 12)} share no history: is --pr-base the PR's base commit, of the same repository?`, { field: "--pr-base" }),
  });
  if (mergeBase === head && asked !== head) {
    throw new InputError(`--pr-base ${asked.slice(0, 12)} comes after the head ${head.slice(0, 12)} (the head is its ancestor): are --pr-base and the head swapped?`, { field: "--pr-base" });
  }
  return { gitDir, head, asked, mergeBase };
}

/** Writes the tree of `sha` from a bare clone into `dest`. */
export async function archiveInto(gitDir: string, sha: string, dest: string): Promise<void> {
  const tar = await execa("git", ["--git-dir", gitDir, "archive", "--format=tar", sha], { encoding: "buffer", reject: false, maxBuffer: 4 * 1024 ** 3 });
  if (tar.exitCode !== 0) throw new InputError(`cannot export ${sha.slice(0, 12)}: ${Buffer.from(tar.stderr).toString().split("\n")[0]}`);
  const untar = await execa("tar", ["-x", "-C", dest], { input: tar.stdout, reject: false });
  if (untar.exitCode !== 0) throw new InputError(`cannot unpack ${sha.slice(0, 12)}: ${String(untar.stderr)}`);
}

/** Makes a tree read-only for everyone (the base beside the workspace: the guard and differential probes read it, nothing writes it). */
export function makeReadOnly(dir: string): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) makeReadOnly(p);
    else if (e.isFile()) chmodSync(p, statSync(p).mode & 0o555);
  }
  chmodSync(dir, 0o555);
}
