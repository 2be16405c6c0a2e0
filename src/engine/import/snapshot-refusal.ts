import { existsSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

/** The paths a patch edits, deletes or renames from: files the tree must already hold. */
export function pathsPatchNeeds(patch: string): string[] {
  const out = new Set<string>();
  for (const line of patch.split("\n")) {
    const m = /^(?:--- (?:"?a\/)|rename from |copy from )(.+?)"?\s*$/.exec(line);
    if (m?.[1] && !line.startsWith("--- /dev/null")) out.add(m[1].replace(/\t.*$/, ""));
  }
  return [...out];
}

/**
 * Why a patch does not apply onto a task's folder base, when the reason is a file the base lacks:
 * names the files and, for an imported task (its base a pruned snapshot), says that real PRs edit
 * any file of the repository and that `--base-as git` gates them. Null when every file is there
 * (the patch does not apply for another reason, which git's message says).
 */
export function snapshotRefusal(patchPath: string, basePath: string, taskDir: string): string | null {
  let patch: string;
  try {
    patch = readFileSync(patchPath, "utf8");
  } catch {
    return null;
  }
  const missing = pathsPatchNeeds(patch).filter((p) => !existsSync(join(basePath, p)));
  if (missing.length === 0) return null;
  const names = `${missing.slice(0, 5).join(", ")}${missing.length > 5 ? ` and ${missing.length - 5} more` : ""}`;
  const base = relative(process.cwd(), basePath) || basePath;
  const imported = existsSync(join(taskDir, "import.yml"));
  const what = imported
    ? `the task's base (${base}) is a pruned snapshot that probegate task import kept (import.yml), not the whole repository, so a patch can only edit the files it holds`
    : `the task's base folder (${base}) does not hold ${missing.length === 1 ? "it" : "them"}`;
  const fix = imported
    ? "To gate real PRs, which may edit any file of the repository, re-import the task with `probegate task import --base-as git` (the base is then the repository at the PR's base commit); to keep the snapshot, add the file with --keep when importing"
    : "Add the file to the base folder, or use a git base (base: { git: { repo, ref } }) that holds the whole repository";
  return `--submission: patch ${patchPath} does not apply onto the base: it edits ${names}, which the base does not have; ${what}. ${fix}.`;
}
