import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LoadedTask } from "./task-load.js";
import type { SubmissionSource } from "./submission.js";
import { copyFilter, SKIP_NAMES } from "./copy-filter.js";
import { copySetupFolders } from "./setup-folders.js";
import { InputError } from "./errors.js";
import { exportTree, git } from "./git.js";
import { snapshotRefusal } from "./import/snapshot-refusal.js";
import { planJudgeReset, type ChangedFile, type ResetAction } from "./judge-reset.js";
import { archiveInto, makeReadOnly, resolvePrCommits } from "./repo-gate/pr-trees.js";

/** A fresh evaluation folder: the workspace (base + submission) and engine-only folders beside it. */
export interface Workspace {
  /** Root of everything this evaluation writes; removed by dispose(). */
  root: string;
  /** The submission's tree, a git repository whose only commit is the base. */
  dir: string;
  /** Engine-owned folder outside the workspace (JUnit report, probe results). */
  judgeDir: string;
  /** The task's setup files, copied beside the workspace (null: the task has none). */
  setupDir: string | null;
  baseSha: string;
  submissionSha: string | null;
  resets: ResetAction[];
  /**
   * A repository gate's PR base: its tree, read-only beside the workspace (for the weakened-test
   * guard and differential probes), the SHA asked for and the merge base the head is compared with.
   */
  prBase: { dir: string; asked: string; mergeBase: string } | null;
  dispose(): void;
}


function emptyExceptGit(dir: string): void {
  for (const name of readdirSync(dir)) if (name !== ".git") rmSync(join(dir, name), { recursive: true, force: true });
}

async function applySubmission(task: LoadedTask, ws: string, scratch: string, sub: SubmissionSource): Promise<string | null> {
  switch (sub.kind) {
    case "patch":
      // --allow-empty: an empty patch is a submission that changes nothing (a task import's "base" example).
      await git(ws, ["apply", "--whitespace=nowarn", "--allow-empty", sub.path], {
        onError: (stderr) =>
          new InputError((task.base.kind === "folder" && snapshotRefusal(sub.path, task.base.path, task.dir)) || `--submission: patch ${sub.path} does not apply onto the base: ${stderr.split("\n").slice(0, 3).join("; ")}`, { file: sub.path }),
      });
      return null;
    case "folder":
      emptyExceptGit(ws);
      cpSync(sub.path, ws, { recursive: true, filter: copyFilter });
      return null;
    case "git": {
      emptyExceptGit(ws);
      mkdirSync(join(scratch, "submission"));
      return exportTree(sub.repo, sub.ref, ws, join(scratch, "submission"), "--submission");
    }
  }
}

/** Paths (relative, posix) that differ from the base commit, including untracked and deleted ones. */
export async function changedPaths(ws: string): Promise<string[]> {
  const out = await git(ws, ["status", "--porcelain", "-z", "--untracked-files=all", "--no-renames"]);
  return out
    .split("\0")
    .filter((e) => e.length > 3)
    .map((e) => e.slice(3));
}

/** Top-level module names the setup folder provides (`shim.py` → shim, `pkg/` → pkg). */
function setupModules(setupDir: string | null): string[] {
  if (!setupDir) return [];
  return readdirSync(setupDir, { withFileTypes: true })
    .filter((e) => (e.isDirectory() && !SKIP_NAMES.has(e.name)) || e.name.endsWith(".py"))
    .map((e) => e.name.replace(/\.py$/, ""));
}

async function resetJudge(ws: string, officialGlobs: readonly string[], reserved: readonly string[] = [], repoGate = false): Promise<ResetAction[]> {
  const changed: ChangedFile[] = [];
  for (const path of await changedPaths(ws)) {
    let content: string | null = null;
    try {
      content = readFileSync(join(ws, path), "utf8");
    } catch {
      content = null;
    }
    let baseContent: string | null = null;
    try {
      baseContent = await git(ws, ["show", `HEAD:${path}`], { onError: () => new Error("absent") });
    } catch {
      baseContent = null;
    }
    changed.push({ path, content, baseContent });
  }
  const actions = planJudgeReset(changed, officialGlobs, reserved, repoGate);
  for (const a of actions) {
    if (a.action === "removed") rmSync(join(ws, a.path), { force: true });
    else await git(ws, ["checkout", "HEAD", "--", a.path]);
  }
  return actions;
}

/**
 * Removes test-time hooks (conftest.py, sitecustomize.py, *.pth, pytest configuration) that a run
 * added or changed since the reset before the official tests, so nothing the official run wrote
 * runs first in a probe process. Official test files are left as the tests left them.
 */
export async function resetHooks(ws: Workspace): Promise<ResetAction[]> {
  const actions = await resetJudge(ws.dir, [], setupModules(ws.setupDir));
  return actions.map((a) => ({ ...a, why: `after the official tests: ${a.why}` }));
}

/**
 * Builds the workspace: copies the base, commits it as the only commit (so no history beyond the
 * base can be searched), applies the submission, then undoes edits to the judge. Inputs are never
 * written to.
 */
export async function createWorkspace(task: LoadedTask, sub: SubmissionSource, prBase?: string): Promise<Workspace> {
  const root = mkdtempSync(join(tmpdir(), `probegate-${task.spec.id}-`));
  const dispose = () => rmSync(root, { recursive: true, force: true });
  try {
    const dir = join(root, "workspace");
    const judgeDir = join(root, "judge");
    const scratch = join(root, "scratch");
    for (const d of [dir, judgeDir, scratch]) mkdirSync(d);
    // Beside the workspace, not in it: the submission's tree never holds the judge's setup files.
    const setupDir = task.setupDirs.length ? join(root, "setup") : null;
    if (setupDir) copySetupFolders(task.setupDirs, setupDir);
    let pr: Workspace["prBase"] = null;
    let prHead: { gitDir: string; sha: string } | null = null;
    if (task.base.kind === "pr") {
      if (!prBase) throw new InputError(`${task.file}: task ${task.spec.id} is a repository gate (base: {pr: true}): give the PR's base commit with --pr-base <sha>.`, { file: task.file, field: "--pr-base" });
      const commits = await resolvePrCommits(sub, prBase, scratch);
      await archiveInto(commits.gitDir, commits.mergeBase, dir);
      const baseDir = join(root, "pr-base");
      mkdirSync(baseDir);
      await archiveInto(commits.gitDir, commits.mergeBase, baseDir);
      makeReadOnly(baseDir);
      pr = { dir: baseDir, asked: commits.asked, mergeBase: commits.mergeBase };
      prHead = { gitDir: commits.gitDir, sha: commits.head };
    } else if (prBase) {
      throw new InputError(`--pr-base is for repository gates (base: {pr: true}); task ${task.spec.id} has a fixed base (${task.file}).`, { field: "--pr-base" });
    } else if (task.base.kind === "folder") cpSync(task.base.path, dir, { recursive: true, filter: copyFilter });
    else {
      await exportTree(task.base.repo, task.base.ref, dir, scratch, `${task.file}: base.git`);
      // The change's test files, as the PR left them, over the base commit's tree (SWE-bench's test patch).
      if (task.base.overlay) cpSync(task.base.overlay, dir, { recursive: true, filter: copyFilter });
    }
    await git(dir, ["init", "--quiet", "--initial-branch=base"]);
    // Keep bytecode caches and judge output out of `git status`, which decides what was changed.
    writeFileSync(join(dir, ".git", "info", "exclude"), "__pycache__/\n*.pyc\n.pytest_cache/\n");
    await git(dir, ["add", "--all", "--force"]);
    await git(dir, ["commit", "--quiet", "--no-verify", "--allow-empty", "-m", "base"]);
    const baseSha = await git(dir, ["rev-parse", "HEAD"]);
    let submissionSha: string | null;
    if (prHead) {
      emptyExceptGit(dir);
      await archiveInto(prHead.gitDir, prHead.sha, dir);
      submissionSha = prHead.sha;
    } else submissionSha = await applySubmission(task, dir, scratch, sub);
    // A repository gate keeps the head's own tests and test configuration (the guard compares them with the base's).
    const resets = await resetJudge(dir, pr ? [] : task.spec.official.files, setupModules(setupDir), pr !== null);
    rmSync(scratch, { recursive: true, force: true });
    return { root, dir, judgeDir, setupDir, baseSha, submissionSha, resets, prBase: pr, dispose };
  } catch (e) {
    dispose();
    throw e;
  }
}
