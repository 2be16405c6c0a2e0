import { execa } from "execa";
import { InputError } from "./errors.js";

/** Git with no user config, hooks or prompts, and a fixed identity: workspaces are reproducible. */
const GIT_ENV = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
  GIT_AUTHOR_NAME: "probegate",
  GIT_AUTHOR_EMAIL: "probegate@localhost",
  GIT_COMMITTER_NAME: "probegate",
  GIT_COMMITTER_EMAIL: "probegate@localhost",
  GIT_AUTHOR_DATE: "2000-01-01T00:00:00Z",
  GIT_COMMITTER_DATE: "2000-01-01T00:00:00Z",
};

/** Runs git; on failure throws `onError(stderr)` (an InputError by default). */
export async function git(
  cwd: string,
  args: readonly string[],
  opts: { input?: string | Buffer; onError?: (stderr: string) => Error; encoding?: "utf8" | "buffer"; env?: Record<string, string> } = {},
): Promise<string> {
  // The sandbox's user owns the work tree after a phase ran: git must not refuse it as "dubious".
  const r = await execa("git", ["-c", "core.hooksPath=/dev/null", "-c", "safe.directory=*", ...args], {
    cwd,
    env: opts.env ? { ...GIT_ENV, ...opts.env } : GIT_ENV,
    reject: false,
    input: opts.input,
    stripFinalNewline: true,
  });
  if (r.exitCode !== 0) {
    const stderr = String(r.stderr || r.shortMessage || "").trim();
    throw opts.onError ? opts.onError(stderr) : new InputError(`git ${args[0]} failed in ${cwd}: ${stderr}`);
  }
  return String(r.stdout);
}

/** Writes the tree of `ref` in repository `repo` (a path or URL) into `dest`; returns the commit SHA. */
export async function exportTree(repo: string, ref: string, dest: string, scratch: string, what: string): Promise<string> {
  const fail = (stderr: string) => new InputError(`${what}: cannot read ${repo} at '${ref}': ${stderr.split("\n")[0]}`);
  await git(scratch, ["clone", "--quiet", "--bare", "--no-tags", repo, "src.git"], { onError: fail });
  const gitDir = `${scratch}/src.git`;
  const sha = await git(scratch, ["--git-dir", gitDir, "rev-parse", "--verify", `${ref}^{commit}`], { onError: fail });
  const tar = await execa("git", ["--git-dir", gitDir, "archive", "--format=tar", sha], { encoding: "buffer", reject: false });
  if (tar.exitCode !== 0) throw fail(Buffer.from(tar.stderr).toString());
  const untar = await execa("tar", ["-x", "-C", dest], { input: tar.stdout, reject: false });
  if (untar.exitCode !== 0) throw fail(String(untar.stderr));
  return sha;
}
