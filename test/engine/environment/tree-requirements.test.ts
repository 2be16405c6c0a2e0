import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { TaskSpecSchema } from "../../../src/core/task-spec.js";
import { HarnessError } from "../../../src/engine/errors.js";
import { loadTask } from "../../../src/engine/task-load.js";
import { projectRequirements, readPyproject } from "../../../src/engine/environment/pyproject-requirements.js";
import { compileInputs } from "../../../src/engine/environment/tree-inputs.js";
import { headDeclaresMore, parseRequirementLines, readTreeRequirements, type TreeContext } from "../../../src/engine/environment/tree-requirements.js";
import { tmp } from "../../helpers.js";
import { BASE_PYTHON } from "./tiny-env.js";

function tree(files: Record<string, string>): string {
  const dir = tmp("pg-tree-");
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

const ctx = (dir: string, over: Partial<TreeContext> = {}): TreeContext => ({ dir, label: "the merge base 1a2b3c4d5e6f", declaredIn: "tasks/g/task.yml", exclude: [], ...over });

describe("parseRequirementLines", () => {
  it("classifies requirements, includes, options and what no index resolves by name, with their lines", () => {
    const text = "# deps\nsix==1.16.0  # pinned\n-r common.txt\n--constraint=pins.txt\n--extra-index-url https://example.org/simple\nnumpy>=2 ; python_version >= '3.11' \\\n  \n-e .\nfoo @ git+https://example.org/foo.git\n./local/pkg\n";
    expect(parseRequirementLines(text)).toEqual([
      { kind: "requirement", name: "six", text: "six==1.16.0", line: 2 },
      { kind: "include", path: "common.txt", constraint: false, line: 3 },
      { kind: "include", path: "pins.txt", constraint: true, line: 4 },
      { kind: "option", text: "--extra-index-url https://example.org/simple", line: 5 },
      { kind: "requirement", name: "numpy", text: "numpy>=2 ; python_version >= '3.11'", line: 6 },
      { kind: "local", name: null, text: "-e .", line: 8 },
      { kind: "local", name: "foo", text: "foo @ git+https://example.org/foo.git", line: 9 },
      { kind: "local", name: null, text: "./local/pkg", line: 10 },
    ]);
  });
});

describe("readTreeRequirements", () => {
  it("follows -r and -c files relative to the file naming them, records each file's sha256, drops excluded packages", () => {
    const dir = tree({
      "requirements/base.txt": "-r common.txt\n-c ../constraints.txt\nPyYAML==6.0.2\nflash_attn==2.8.0\n",
      "requirements/common.txt": "six==1.16.0\n--find-links https://example.org/wheels\n",
      "constraints.txt": "numpy<3\n",
    });
    const read = readTreeRequirements(ctx(dir, { exclude: ["flash-attn"] }), ["requirements/base.txt"]);
    expect(read.requirements).toEqual([
      { name: "six", text: "six==1.16.0", file: "requirements/common.txt", line: 1 },
      { name: "PyYAML", text: "PyYAML==6.0.2", file: "requirements/base.txt", line: 3 },
    ]);
    expect(read.constraints).toEqual([{ name: "numpy", text: "numpy<3", file: "constraints.txt", line: 1 }]);
    expect(read.options).toEqual(["--find-links https://example.org/wheels"]);
    expect(read.files.map((f) => f.path)).toEqual(["requirements/base.txt", "requirements/common.txt", "constraints.txt"]);
    expect(read.files[0]?.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it("a declared file the tree lacks is a HarnessError naming the file, the tree and the task's field", () => {
    const err = (() => {
      try {
        readTreeRequirements(ctx(tree({ "requirements.txt": "six\n" })), ["requirements/test.txt"]);
      } catch (e) {
        return e;
      }
    })() as HarnessError;
    expect(err).toBeInstanceOf(HarnessError);
    expect(err.phase).toBe("environment");
    expect(err.message).toBe(
      "requirements/test.txt is not in the merge base 1a2b3c4d5e6f (environment.fromTree.requirements in tasks/g/task.yml): the gate builds its environment from what the base declares. Fix the task's list, or evaluate against a base that has the file; no test or probe was run.",
    );
  });

  it("a -r naming a missing file, an editable, a URL and a symlink out of the tree are refused with file and line", () => {
    const refused = (files: Record<string, string>, exclude: string[] = []) => {
      try {
        readTreeRequirements(ctx(tree(files), { exclude }), ["requirements.txt"]);
        return "";
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(refused({ "requirements.txt": "six\n-r missing.txt\n" })).toMatch(/^requirements\.txt:2 names missing\.txt, which is not in the merge base 1a2b3c4d5e6f/);
    expect(refused({ "requirements.txt": "-e .[dev]\n" })).toMatch(/^requirements\.txt:1: '-e \.\[dev\]' is an editable install, .*Read the project's dependencies with environment\.fromTree\.pyproject instead/);
    expect(refused({ "requirements.txt": "te @ https://example.org/te.whl\n" })).toMatch(/^requirements\.txt:1: 'te @ https:\/\/example\.org\/te\.whl' is a path or URL, .*Add te to environment\.fromTree\.exclude/);
    // Excluded by name, the URL is never looked at.
    expect(refused({ "requirements.txt": "te @ https://example.org/te.whl\nsix\n" }, ["te"])).toBe("");
    const dir = tree({ "requirements.txt": "-r escape.txt\n" });
    symlinkSync("/etc/hostname", join(dir, "escape.txt"));
    expect(() => readTreeRequirements(ctx(dir), ["requirements.txt"])).toThrow(/escape\.txt leads outside the repository/);
  });

  it("leniently (the head, for a note), skips what it cannot read", () => {
    const dir = tree({ "requirements.txt": "-e .\nsix\n-r escape.txt\n" });
    // A head's symlink out of the tree is left unread: the PR cannot make the gate end in error.
    symlinkSync("/etc/hostname", join(dir, "escape.txt"));
    const read = readTreeRequirements(ctx(dir, { lenient: true }), ["requirements.txt", "gone.txt"]);
    expect(read.requirements.map((r) => r.text)).toEqual(["six"]);
  });
});

describe("headDeclaresMore", () => {
  it("names requirements of packages the base lacks, and changed ones", () => {
    const r = (text: string, file = "requirements.txt") => ({ name: text.split(/[=<>]/)[0] as string, text, file, line: 1 });
    expect(headDeclaresMore([r("six==1.16.0"), r("PyYAML==6.0.2")], [r("six==1.17.0"), r("pyyaml==6.0.2"), r("rich>=13")])).toEqual({
      added: ["rich>=13 (requirements.txt)"],
      changed: ["six==1.16.0 → six==1.17.0 (requirements.txt)", "PyYAML==6.0.2 → pyyaml==6.0.2 (requirements.txt)"],
    });
  });
});

describe("pyproject.toml [project]", () => {
  const project = { name: "calc", dependencies: ["six==1.16.0"], "optional-dependencies": { test: ["pytest>=8"], all: ["calc[test]", "rich"] } };
  it("reads dependencies and the extras named, an extra naming the project itself expanded", () => {
    expect(projectRequirements(project, ["all"], "pyproject.toml").map((r) => [r.text, r.file])).toEqual([
      ["six==1.16.0", "pyproject.toml [project] dependencies"],
      ["pytest>=8", "pyproject.toml [project.optional-dependencies] test"],
      ["rich", "pyproject.toml [project.optional-dependencies] all"],
    ]);
  });
  it("refuses dynamic dependencies and an extra it does not define", () => {
    expect(() => projectRequirements({ ...project, dynamic: ["dependencies"] }, [], "pyproject.toml")).toThrow(/lists dependencies in project\.dynamic/);
    expect(() => projectRequirements(project, ["docs"], "pyproject.toml")).toThrow("environment.fromTree.pyproject.extras names the extra 'docs', which pyproject.toml does not define (it has test, all)");
  });
  it("is read with tomllib, never built; a missing file names the field", async () => {
    const dir = tree({ "pyproject.toml": '[project]\nname = "calc"\ndependencies = ["six==1.16.0"]\n[project.optional-dependencies]\ntest = ["pytest>=8"]\n[tool.ruff]\nline-length = 100\n' });
    const read = await readPyproject(ctx(dir), "pyproject.toml", ["test"], BASE_PYTHON);
    expect(read?.requirements.map((r) => r.text)).toEqual(["six==1.16.0", "pytest>=8"]);
    await expect(readPyproject(ctx(tree({})), "pyproject.toml", [], BASE_PYTHON)).rejects.toThrow(
      "pyproject.toml is not in the merge base 1a2b3c4d5e6f: the gate builds its environment from what the base declares. Fix the task, or evaluate against a base that has it (environment.fromTree.pyproject (tasks/g/task.yml)); no test or probe was run.",
    );
  });
});

describe("compileInputs: the key of a tree environment", () => {
  const fromTree = { requirements: ["requirements.txt"], pins: [], exclude: [] };
  const key = (text: string, pins: string[] = []) =>
    compileInputs(readTreeRequirements(ctx(tree({ "requirements.txt": text })), ["requirements.txt"]), { requirements: pins.map((p) => ({ name: p, text: p, file: "pins", line: null })), options: [] }, fromTree, { range: ">=3.11,<3.13", version: "3.11.2" });
  it("is of what the files declare: a comment makes no new key, a requirement or a pin does", () => {
    const a = key("six==1.16.0\n");
    expect(a.pythonVersion).toBe("3.11");
    expect(a.tree).toBe("# requirements.txt\nsix==1.16.0\n");
    expect(key("# a comment\nsix==1.16.0   \n").inputHash).toBe(a.inputHash);
    expect(key("six==1.17.0\n").inputHash).not.toBe(a.inputHash);
    expect(key("six==1.16.0\n", ["pytest==9.2.0"]).inputHash).not.toBe(a.inputHash);
  });
});

describe("task.yml environment.fromTree", () => {
  const gate = { id: "g", title: "G", area: "other", base: { pr: true }, official: { command: ["{python}"] }, probes: { path: "p" } };
  const issues = (spec: object) => TaskSpecSchema.safeParse(spec).error?.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  it("defaults its lists, and the pyproject's path", () => {
    const env = TaskSpecSchema.parse({ ...gate, environment: { python: ">=3.11,<3.13", fromTree: { pyproject: { extras: ["test"] } } } }).environment;
    expect(env).toEqual({ python: ">=3.11,<3.13", fromTree: { requirements: [], pyproject: { path: "pyproject.toml", extras: ["test"] }, pins: [], exclude: [] } });
  });
  it("is for repository gates, names something to read, keeps paths in the repository, and refuses a package both pinned and excluded", () => {
    expect(issues({ ...gate, base: { path: "b" }, environment: { fromTree: { requirements: ["requirements.txt"] } } })).toEqual([
      "environment.fromTree: is for repository gates (base: {pr: true}), whose base moves with each PR; a fixed base has a fixed lock (environment.lock)",
    ]);
    expect(issues({ ...gate, environment: { fromTree: {} } })).toEqual(["environment.fromTree: names nothing to read: list requirement files in fromTree.requirements, or set fromTree.pyproject"]);
    expect(issues({ ...gate, environment: {} })).toEqual(["environment.lock: is required: name the lock file, or build the environment from the repository with fromTree"]);
    expect(issues({ ...gate, environment: { fromTree: { requirements: ["../x.txt", "requirements/*.txt"] } } })).toEqual([
      "environment.fromTree.requirements.0: a file of the repository, relative to its root, without '..' or globs, e.g. requirements/base.txt",
      "environment.fromTree.requirements.1: a file of the repository, relative to its root, without '..' or globs, e.g. requirements/base.txt",
    ]);
    expect(issues({ ...gate, environment: { fromTree: { requirements: ["r.txt"], pins: ["Torch==2.15.0"], exclude: ["torch"] } } })).toEqual([
      "environment.fromTree.exclude.0: 'torch' is also in fromTree.pins: a package is either pinned by the task or never installed",
    ]);
    expect(issues({ ...gate, environment: { fromTree: { requirements: ["r.txt"], pins: ["te @ https://x/te.whl"] } } })?.[0]).toMatch(/^environment\.fromTree\.pins\.0: a requirement such as torch==2\.15\.0/);
  });

  it("a task whose lock pins a package it also excludes does not load, naming the field and the lock's line", () => {
    const dir = join(tmp("pg-tree-task-"), "g");
    const lock = `torch==2.15.0 \\\n    --hash=sha256:${"a".repeat(64)}\n`;
    const yml = "id: g\ntitle: G\narea: other\nbase: { pr: true }\nenvironment:\n  lock: pins.lock\n  fromTree:\n    requirements: [requirements.txt]\n    exclude: [torch]\nofficial: { command: [\"{python}\"] }\nprobes: { path: p }\n";
    for (const [rel, text] of Object.entries({ "task.yml": yml, "prompt.md": "x\n", "pins.lock": lock, "p/.keep": "" })) {
      mkdirSync(dirname(join(dir, rel)), { recursive: true });
      writeFileSync(join(dir, rel), text);
    }
    expect(() => loadTask(dir)).toThrow(/task\.yml:9: environment\.fromTree\.exclude: torch is pinned by the task's lock \(.*pins\.lock:1\): a package is either pinned by the task or never installed\./);
  });
});
