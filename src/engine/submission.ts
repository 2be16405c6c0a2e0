import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { InputError } from "./errors.js";

/** What the user handed in as the submission. */
export type SubmissionSource =
  | { kind: "folder"; path: string }
  | { kind: "patch"; path: string }
  | { kind: "git"; repo: string; ref: string };

/**
 * Reads `--submission`: an existing folder (the whole tree), an existing `.patch`/`.diff` file
 * (applied onto the base), or `repo@ref` (a git URL or path, and a branch, tag or SHA).
 */
export function parseSubmission(text: string, cwd = process.cwd()): SubmissionSource {
  const local = resolve(cwd, text);
  if (existsSync(local)) {
    const st = statSync(local);
    if (st.isDirectory()) return { kind: "folder", path: local };
    if (st.isFile()) {
      if (/\.(patch|diff)$/.test(local)) return { kind: "patch", path: local };
      throw new InputError(`--submission: ${local} is a file but not a .patch or .diff; give a folder, a patch, or repo@ref.`, { field: "--submission" });
    }
  }
  const at = text.lastIndexOf("@");
  // "git@host:org/repo" has its '@' before the host: a ref never contains ':' or starts the string.
  if (at > 0) {
    const repo = text.slice(0, at);
    const ref = text.slice(at + 1);
    const repoIsRemote = /^[a-z+]+:\/\//.test(repo) || /^[\w.-]+@[\w.-]+:/.test(repo);
    if (ref && !ref.includes(":") && (repoIsRemote || existsSync(resolve(cwd, repo)))) {
      return { kind: "git", repo: repoIsRemote ? repo : resolve(cwd, repo), ref };
    }
  }
  throw new InputError(
    `--submission: '${text}' is not an existing folder, .patch/.diff file, or repo@ref (a git URL or path, '@', and a branch, tag or SHA).`,
    { field: "--submission" },
  );
}

/** A short label for tables and results. */
export function describeSubmission(s: SubmissionSource): string {
  return s.kind === "git" ? `${s.repo}@${s.ref}` : s.path;
}
