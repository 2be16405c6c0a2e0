import { execFileSync } from "node:child_process";

/** The commit a folder's git checkout is at; null when it is not in one (or git is missing). */
export function gitHead(dir: string): string | null {
  try {
    const out = execFileSync("git", ["-C", dir, "rev-parse", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 10_000 }).trim();
    return /^[0-9a-f]{40,64}$/.test(out) ? out : null;
  } catch {
    return null;
  }
}

/**
 * The probe-set version a result records: the evaluator commit checked out (the repository of the
 * task folder; in a dispatched run without a git folder, GITHUB_SHA, the commit the dispatch ran
 * the workflow at) and the probes repository's commit. Read from the runner's checkouts, so it
 * names what was actually run, not what the app asked for.
 */
export function probeSetSource(taskDir: string, probesDir: string | null, env: NodeJS.ProcessEnv, mode: "runner" | "standalone"): { evaluatorCommit: string | null; probesCommit: string | null } {
  const evaluatorCommit = gitHead(taskDir) ?? (mode === "runner" ? (env.GITHUB_SHA ?? null) : null);
  return { evaluatorCommit, probesCommit: probesDir ? gitHead(probesDir) : null };
}
