import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LoadedTask } from "./task-load.js";
import type { SubmissionSource } from "./submission.js";
import { InputError } from "./errors.js";
import { exportTree, git } from "./git.js";
import { planJudgeReset, type ChangedFile, type ResetAction } from "./judge-reset.js";

/** A fresh evaluation folder: the workspace (base + submission) and engine-only folders beside it. */
export interface Workspace {
  /** Root of everything this evaluation writes; removed by dispose(). */
  root: string;
  /** The submission's tree, a git repository whose only commit is the base. */
  dir: string;
  /** Engine-owned folder outside the workspace (JUnit report, probe results). */
  judgeDir: string;
  baseSha: string;
  submissionSha: string | null;
  resets: ResetAction[];
  dispose(): void;
}

const SKIP = new Set([".git", "__pycache__", ".pytest_cache"]);
const copyFilter = (src: string) => !SKIP.has(src.split("/").pop() ?? "");

function emptyExceptGit(dir: string): void {
  for (const name of readdirSync(dir)) if (name !== ".git") rmSync(join(dir, name), { recursive: true, force: true });
}

async function applySubmission(ws: string, scratch: string, sub: SubmissionSource): Promise<string | null> {
  switch (sub.kind) {
    case "patch":
      await git(ws, ["apply", "--whitespace=nowarn", sub.path], {
        onError: (stderr) => new InputError(`--submission: patch ${sub.path} does not apply onto the base: ${stderr.split("\n").slice(0, 3).join("; ")}`, { file: sub.path }),
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
async function changedPaths(ws: string): Promise<string[]> {
  const out = await git(ws, ["status", "--porcelain", "-z", "--untracked-files=all", "--no-renames"]);
  return out
    .split("\0")
    .filter((e) => e.length > 3)
    .map((e) => e.slice(3));
}

async function resetJudge(ws: string, officialGlobs: readonly string[]): Promise<ResetAction[]> {
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
  const actions = planJudgeReset(changed, officialGlobs);
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
  const actions = await resetJudge(ws.dir, []);
  return actions.map((a) => ({ ...a, why: `after the official tests: ${a.why}` }));
}

/**
 * Builds the workspace: copies the base, commits it as the only commit (so no history beyond the
 * base can be searched), applies the submission, then undoes edits to the judge. Inputs are never
 * written to.
 */
export async function createWorkspace(task: LoadedTask, sub: SubmissionSource): Promise<Workspace> {
  const root = mkdtempSync(join(tmpdir(), `probegate-${task.spec.id}-`));
  const dispose = () => rmSync(root, { recursive: true, force: true });
  try {
    const dir = join(root, "workspace");
    const judgeDir = join(root, "judge");
    const scratch = join(root, "scratch");
    for (const d of [dir, judgeDir, scratch]) mkdirSync(d);
    if (task.base.kind === "folder") cpSync(task.base.path, dir, { recursive: true, filter: copyFilter });
    else await exportTree(task.base.repo, task.base.ref, dir, scratch, `${task.file}: base.git`);
    await git(dir, ["init", "--quiet", "--initial-branch=base"]);
    // Keep bytecode caches and judge output out of `git status`, which decides what was changed.
    writeFileSync(join(dir, ".git", "info", "exclude"), "__pycache__/\n*.pyc\n.pytest_cache/\n");
    await git(dir, ["add", "--all", "--force"]);
    await git(dir, ["commit", "--quiet", "--no-verify", "--allow-empty", "-m", "base"]);
    const baseSha = await git(dir, ["rev-parse", "HEAD"]);
    const submissionSha = await applySubmission(dir, scratch, sub);
    const resets = await resetJudge(dir, task.spec.official.files);
    rmSync(scratch, { recursive: true, force: true });
    return { root, dir, judgeDir, baseSha, submissionSha, resets, dispose };
  } catch (e) {
    dispose();
    throw e;
  }
}
