/** A small repository with a first-parent history of merged PRs (a merge, squashes, a direct commit), for the gate replay tests. */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { tmp } from "../helpers.js";
import { OPS, TEST, write } from "../engine/repo-gate/gate-repo.js";

/** Git in `cwd`, committing at `date` (ISO) when given. */
export function gitAt(cwd: string, date: string | null, ...args: string[]): string {
  const env = { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1", ...(date ? { GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date } : {}) };
  return execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", ...args], { cwd, encoding: "utf8", env }).trim();
}

export interface History {
  dir: string;
  /** The root commit: base files, no parent. */
  root: string;
  /** "Touch the docs (#10)": docs/ only, pushed straight to main. */
  docs: string;
  /** The feature branch's two commits (not on main's first-parent line). */
  branch: [string, string];
  /** "Merge pull request #11 from octo/mul" (body: "Add mul to calc"): first parent `docs`. */
  merge: string;
  /** "Fix add for negatives (#12)": a squash changing calc/ops.py. */
  squash: string;
}

/** root (2025-01-01) → docs (2025-02-01) → merge of a two-commit branch (2025-03-01) → squash (2025-04-01). */
export function history(): History {
  const dir = tmp("pg-replay-repo-");
  const at = (date: string | null, ...args: string[]) => gitAt(dir, date, ...args);
  at(null, "init", "-q");
  write(dir, { "calc/__init__.py": "", "calc/ops.py": OPS, "tests/test_ops.py": TEST, "docs/readme.md": "calc\n" });
  at(null, "add", "-A");
  at("2025-01-01T00:00:00Z", "commit", "-qm", "initial");
  const root = at(null, "rev-parse", "HEAD");
  write(dir, { "docs/readme.md": "calc, documented\n" });
  at("2025-02-01T00:00:00Z", "commit", "-qam", "Touch the docs (#10)");
  const docs = at(null, "rev-parse", "HEAD");
  at(null, "checkout", "-qb", "mul");
  write(dir, { "calc/ops.py": `${OPS}\n\ndef mul(a, b):\n    return a * b\n` });
  at("2025-02-10T00:00:00Z", "commit", "-qam", "mul");
  const b1 = at(null, "rev-parse", "HEAD");
  write(dir, { "calc/extra.py": "X = 1\n" });
  at(null, "add", "-A");
  at("2025-02-11T00:00:00Z", "commit", "-qm", "extra");
  const b2 = at(null, "rev-parse", "HEAD");
  at(null, "checkout", "-q", "main");
  at("2025-03-01T00:00:00Z", "merge", "-q", "--no-ff", "mul", "-m", "Merge pull request #11 from octo/mul", "-m", "Add mul to calc");
  const merge = at(null, "rev-parse", "HEAD");
  write(dir, { "calc/ops.py": `${OPS}# negatives too\n` });
  at("2025-04-01T00:00:00Z", "commit", "-qam", "Fix add for negatives (#12)");
  const squash = at(null, "rev-parse", "HEAD");
  return { dir, root, docs, branch: [b1, b2], merge, squash };
}

/** A bare mirror of `dir`, as /work/.mirror/…/repo is. */
export function bareMirror(dir: string): string {
  const parent = tmp("pg-replay-mirror-");
  gitAt(parent, null, "clone", "-q", "--mirror", dir, "repo");
  return join(parent, "repo");
}
