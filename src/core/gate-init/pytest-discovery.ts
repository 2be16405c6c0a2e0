/**
 * Where a repository keeps its tests, as pytest would find them: the configuration pytest reads
 * (pytest.ini, .pytest.ini, pyproject.toml's [tool.pytest.ini_options] or [tool.pytest], tox.ini's
 * [pytest], setup.cfg's [tool:pytest], in pytest's order), its `testpaths`, `python_files` and
 * `pythonpath`, and the folders pytest puts on sys.path for each test file. Pure.
 */
import picomatch from "picomatch";

export interface PytestConfig {
  /** The file the settings came from ("pyproject.toml [tool.pytest.ini_options]"), null: pytest's defaults. */
  from: string | null;
  testpaths: string[];
  pythonFiles: string[];
  pythonpath: string[];
}

export const DEFAULT_PYTHON_FILES = ["test_*.py", "*_test.py"];
/** pytest's default norecursedirs, and folders no repository keeps tests in. */
const NO_RECURSE = ["*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}", "__pycache__", "site-packages"];

/** The `key = value` settings of one [section] of an INI file (continuation lines joined); null when it has none. */
export function iniSection(text: string, section: string): Record<string, string> | null {
  let inside = false;
  let found = false;
  let key: string | null = null;
  const out: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+[#;].*$/, "");
    const head = /^\s*\[([^\]]+)\]\s*$/.exec(line);
    if (head) {
      inside = (head[1] as string).trim() === section;
      found ||= inside;
      key = null;
      continue;
    }
    if (!inside || /^\s*[#;]/.test(line) || !line.trim()) continue;
    if (/^\s/.test(line) && key) {
      out[key] = `${out[key]} ${line.trim()}`.trim();
      continue;
    }
    const kv = /^([^=:]+)[=:](.*)$/.exec(line);
    if (!kv) continue;
    key = (kv[1] as string).trim();
    out[key] = (kv[2] as string).trim();
  }
  return found ? out : null;
}

const words = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : typeof v === "string" ? v.split(/\s+/).filter(Boolean) : []);

/**
 * pytest's settings for a repository whose root holds `files` (path → text of the ones present) and
 * whose pyproject.toml has `pyprojectTool` as its [tool.pytest] table (null: none, or no pyproject).
 */
export function pytestConfig(files: ReadonlyMap<string, string>, pyprojectTool: Record<string, unknown> | null): PytestConfig {
  const make = (from: string, s: Record<string, unknown>): PytestConfig => ({
    from,
    testpaths: words(s.testpaths),
    pythonFiles: words(s.python_files).length ? words(s.python_files) : DEFAULT_PYTHON_FILES,
    pythonpath: words(s.pythonpath),
  });
  for (const name of ["pytest.ini", ".pytest.ini"]) {
    const text = files.get(name);
    if (text !== undefined) return make(`${name} [pytest]`, iniSection(text, "pytest") ?? {});
  }
  if (pyprojectTool) {
    const ini = pyprojectTool.ini_options;
    if (ini && typeof ini === "object") return make("pyproject.toml [tool.pytest.ini_options]", ini as Record<string, unknown>);
    return make("pyproject.toml [tool.pytest]", pyprojectTool);
  }
  const tox = files.get("tox.ini") !== undefined ? iniSection(files.get("tox.ini") as string, "pytest") : null;
  if (tox) return make("tox.ini [pytest]", tox);
  const cfg = files.get("setup.cfg") !== undefined ? iniSection(files.get("setup.cfg") as string, "tool:pytest") : null;
  if (cfg) return make("setup.cfg [tool:pytest]", cfg);
  return { from: null, testpaths: [], pythonFiles: DEFAULT_PYTHON_FILES, pythonpath: [] };
}

const trimSlash = (p: string) => p.replace(/^\.\//, "").replace(/\/+$/, "");

/** The test files among `paths` (the tree's files): under `testpaths` (all of the tree when none), named as `python_files` says. */
export function testFiles(paths: readonly string[], cfg: PytestConfig): string[] {
  const named = picomatch(cfg.pythonFiles, { basename: true, dot: true });
  const skip = picomatch(NO_RECURSE, { dot: true });
  const under = cfg.testpaths.map(trimSlash).filter((p) => p && p !== ".");
  const inTestpaths = (p: string) =>
    under.length === 0 || under.some((t) => p === t || p.startsWith(`${t}/`) || (/[*?[]/.test(t) && (picomatch(t)(p) || picomatch(`${t}/**`)(p))));
  return paths
    .filter((p) => p.endsWith(".py") && named(p) && inTestpaths(p))
    .filter((p) => !p.split("/").slice(0, -1).some((d) => skip(d)))
    .sort();
}

const dirOf = (file: string) => file.split("/").slice(0, -1).join("/");

/** The folder pytest (rootdir-relative "prepend" import mode) puts on sys.path for a test file: the first one up that is not a package. */
export function testBasedir(test: string, files: ReadonlySet<string>): string {
  let dir = dirOf(test);
  while (dir && files.has(`${dir}/__init__.py`)) dir = dirOf(dir);
  return dir;
}

/**
 * Folders absolute imports are looked up in, in order: the repository's root, src/ when it holds
 * Python files, pytest's `pythonpath`, the folders given on the command line, and each test file's
 * basedir (a helper module beside the tests is importable by its bare name).
 */
export function importRoots(files: ReadonlySet<string>, tests: readonly string[], cfg: PytestConfig, extra: readonly string[]): string[] {
  const roots = [""];
  const add = (r: string) => {
    const t = trimSlash(r);
    if (!roots.includes(t === "." ? "" : t)) roots.push(t === "." ? "" : t);
  };
  if ([...files].some((f) => f.startsWith("src/"))) add("src");
  for (const p of cfg.pythonpath) add(p);
  for (const p of extra) add(p);
  for (const t of tests) add(testBasedir(t, files));
  return roots;
}

/** The conftest.py files pytest loads for a test file: in its folder and each one above it. */
export function conftestsOf(test: string, files: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let dir = dirOf(test); ; dir = dirOf(dir)) {
    const c = dir ? `${dir}/conftest.py` : "conftest.py";
    if (files.has(c)) out.unshift(c);
    if (!dir) break;
  }
  return out;
}
