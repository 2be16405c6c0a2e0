import { describe, expect, it } from "vitest";
import { GatePlanError, moduleName, planGate } from "../../../src/core/gate-init/gate-plan.js";
import { conftestsOf, importRoots, iniSection, pytestConfig, testBasedir, testFiles } from "../../../src/core/gate-init/pytest-discovery.js";

describe("pytest's configuration and test files, as gate init reads them", () => {
  it("takes the settings from the file pytest would, in its order", () => {
    const ini = "[pytest]\ntestpaths = tests\n    integration\npython_files = check_*.py\n";
    expect(pytestConfig(new Map([["pytest.ini", ini], ["tox.ini", "[pytest]\ntestpaths = other\n"]]), { ini_options: { testpaths: ["x"] } })).toEqual({
      from: "pytest.ini [pytest]",
      testpaths: ["tests", "integration"],
      pythonFiles: ["check_*.py"],
      pythonpath: [],
    });
    expect(pytestConfig(new Map(), { ini_options: { testpaths: ["t"], pythonpath: "src lib" } })).toMatchObject({ from: "pyproject.toml [tool.pytest.ini_options]", testpaths: ["t"], pythonpath: ["src", "lib"] });
    expect(pytestConfig(new Map([["setup.cfg", "[metadata]\nname = x\n[tool:pytest]\ntestpaths = unit\n"]]), null)).toMatchObject({ from: "setup.cfg [tool:pytest]", testpaths: ["unit"] });
    expect(pytestConfig(new Map([["tox.ini", "[tox]\nenvlist = py311\n"]]), null)).toEqual({ from: null, testpaths: [], pythonFiles: ["test_*.py", "*_test.py"], pythonpath: [] });
    expect(iniSection("[a]\nk: v ; note\n", "a")).toEqual({ k: "v" });
  });

  it("finds test files under testpaths by python_files, skipping what pytest does not recurse into", () => {
    const paths = ["tests/test_a.py", "tests/b_test.py", "tests/helpers.py", "tests/.hidden/test_h.py", "build/test_b.py", "other/test_o.py", "tests/data.txt"];
    expect(testFiles(paths, { from: null, testpaths: [], pythonFiles: ["test_*.py", "*_test.py"], pythonpath: [] })).toEqual(["other/test_o.py", "tests/b_test.py", "tests/test_a.py"]);
    expect(testFiles(paths, { from: "x", testpaths: ["tests/"], pythonFiles: ["test_*.py"], pythonpath: [] })).toEqual(["tests/test_a.py"]);
  });

  it("puts each test's basedir, src/ and pythonpath on the import roots; finds the conftest.py files of a test", () => {
    const files = new Set(["tests/__init__.py", "tests/unit/__init__.py", "tests/unit/test_x.py", "it/test_y.py", "src/pkg/__init__.py", "conftest.py", "tests/unit/conftest.py"]);
    expect(testBasedir("tests/unit/test_x.py", files)).toBe("");
    expect(testBasedir("it/test_y.py", files)).toBe("it");
    expect(importRoots(files, ["tests/unit/test_x.py", "it/test_y.py"], { from: null, testpaths: [], pythonFiles: [], pythonpath: ["lib"] }, ["vendor"])).toEqual(["", "src", "lib", "vendor", "it"]);
    expect(conftestsOf("tests/unit/test_x.py", files)).toEqual(["conftest.py", "tests/unit/conftest.py"]);
    expect(moduleName("src/pkg/mod.py", ["", "src"])).toBe("pkg.mod");
    expect(moduleName("my-tools/x.py", [""])).toBeNull();
  });
});

describe("planGate: each gated glob's modules and the tests that reach them", () => {
  const sources = new Map([
    ["pkg/__init__.py", ""],
    ["pkg/comm.py", "import torch\n"],
    ["pkg/io.py", ""],
    ["tests/conftest.py", "from pkg import io\n"],
    ["tests/test_comm.py", "def test():\n    from pkg.comm import x\n"],
    ["tests/test_io.py", "def test():\n    pass\n"],
  ]);
  const config = { from: null, testpaths: [], pythonFiles: ["test_*.py"], pythonpath: [] };
  const plan = (globs: string[], testGlobs: string[] = []) => planGate({ paths: [...sources.keys(), "pkg/README.md"], sources, config, globs, testGlobs, src: [] });

  it("maps globs to tests, a conftest.py counting for every test below it; exclusions apply", () => {
    const p = plan(["pkg/comm.py", "pkg/io.py"]);
    expect(p.globs.map((g) => [g.glob, g.tests.map((t) => t.file)])).toEqual([
      ["pkg/comm.py", ["tests/test_comm.py"]],
      ["pkg/io.py", ["tests/test_comm.py", "tests/test_io.py"]],
    ]);
    expect(p.globs[1]?.tests[1]?.chain).toEqual(["tests/test_io.py", "tests/conftest.py", "pkg/io.py"]);
    expect(plan(["pkg/**", "!pkg/io.py"]).globs[0]?.modules.map((m) => m.name)).toEqual(["pkg", "pkg.comm"]);
    const direct = planGate({ paths: [...sources.keys()], sources, config, globs: ["pkg/io.py", "pkg/comm.py"], testGlobs: [], src: [], maxHops: 1 });
    expect(direct.globs.map((g) => [g.glob, g.tests.map((t) => t.file)])).toEqual([["pkg/io.py", []], ["pkg/comm.py", ["tests/test_comm.py"]]]);
  });

  it("throws a GatePlanError naming the flag for each thing missing", () => {
    const flag = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return e instanceof GatePlanError ? e.flag : String(e);
      }
      return null;
    };
    expect(flag(() => plan(["pkg/README.md"]))).toBe("--src");
    expect(flag(() => plan(["nothing/**"]))).toBe("--paths");
    expect(flag(() => plan(["!pkg/**"]))).toBe("--paths");
    expect(flag(() => plan(["pkg/comm.py"], ["tests/none_*.py"]))).toBe("--tests");
  });
});
