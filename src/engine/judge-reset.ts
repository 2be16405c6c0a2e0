import picomatch from "picomatch";
import { posix } from "node:path";

/** What the engine does to one changed path before the official tests run. */
export interface ResetAction {
  path: string;
  action: "restored" | "removed";
  why: string;
}

const HOOK_FILES = new Set(["sitecustomize.py", "usercustomize.py"]);
const PYTEST_CONFIGS = new Set(["pytest.ini", ".pytest.ini"]);
const SHARED_CONFIGS = new Set(["pyproject.toml", "setup.cfg", "tox.ini"]);
const PYTEST_HEADER = /^\s*\[(tool\.pytest\.ini_options|tool:pytest|pytest)\]\s*$/;

/** A file the submission changed, with its content now and in the base (null where absent). */
export interface ChangedFile {
  path: string;
  content: string | null;
  baseContent: string | null;
}

/** The text of the pytest section of an ini/toml file ("" when none), to tell whether it changed. */
export function pytestSection(text: string): string {
  const lines = text.split(/\r?\n/);
  const start = lines.findIndex((l) => PYTEST_HEADER.test(l));
  if (start < 0) return "";
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((l) => /^\s*\[/.test(l));
  return [lines[start], ...(end < 0 ? rest : rest.slice(0, end))].map((l) => l?.trim()).filter(Boolean).join("\n");
}

/**
 * Decides, for each path the submission added or changed relative to the base, whether it must be
 * put back: official test files (task globs), test-time hooks (conftest.py, sitecustomize.py,
 * usercustomize.py, *.pth) and pytest configuration. Pure: the caller reads the files and applies.
 *
 * @param changed paths (posix, relative) that differ from the base, with their content now and in
 *   the base (null where the file does not exist)
 * @param setupModules top-level module names of the task's setup files, which the workspace may not shadow
 * @param repoGate a repository gate's PR: its conftest.py files and pytest configuration are the
 *   repository's own and stay as the head has them (the weakened-test guard reports what they
 *   change); interpreter start-up hooks are still removed
 */
export function planJudgeReset(changed: readonly ChangedFile[], officialGlobs: readonly string[], setupModules: readonly string[] = [], repoGate = false): ResetAction[] {
  const reserved = new Set(setupModules);
  const isOfficial = picomatch(officialGlobs as string[], { dot: true });
  const actions: ResetAction[] = [];
  for (const { path, content, baseContent } of changed) {
    const name = posix.basename(path);
    const base = baseContent !== null;
    const put = (why: string) => actions.push({ path, action: base ? "restored" : "removed", why });
    const top = (path.split("/")[0] ?? "").replace(/\.py$/, "");
    if (reserved.has(top) && (base || content !== null)) {
      put(`'${top}' is a module of the task's setup files; a workspace file of that name would shadow it`);
    } else if (isOfficial(path)) {
      if (base || content !== null) put("official test files are restored from the base before the official tests run");
    } else if (repoGate && (name === "conftest.py" || PYTEST_CONFIGS.has(name) || SHARED_CONFIGS.has(name))) {
      continue;
    } else if (name === "conftest.py") {
      if (base || content !== null) put("conftest.py is a test-time hook; only the task's own are kept");
    } else if (HOOK_FILES.has(name) || name.endsWith(".pth")) {
      if (content !== null) put(`${name} runs at interpreter start-up; submissions may not add or change it`);
    } else if (PYTEST_CONFIGS.has(name)) {
      if (content !== null) put("pytest configuration can load plugins or change what runs; it is kept as in the base");
    } else if (SHARED_CONFIGS.has(name) && content !== null && pytestSection(content) !== pytestSection(baseContent ?? "")) {
      put(`${name} gained or changed a pytest section, which can load plugins or change what runs`);
    }
  }
  return actions;
}
