import { describe, expect, it } from "vitest";
import { chainTo, importGraph, importsOf, reachable } from "../../../src/core/gate-init/import-graph.js";
import { statements } from "../../../src/core/gate-init/python-source.js";

describe("statements: Python source as statements, for the static readers of gate init", () => {
  it("joins bracketed and backslashed lines, drops comments, keeps strings, splits on ';' and skips docstring contents", () => {
    const src = [
      '"""Module doc.',
      "import not_an_import",
      '"""',
      "import os  # a comment",
      "from a.b import (c,  # why",
      "    d as e)",
      "x = 1; import y",
      "z = 'import q' \\",
      "  + '#'",
      "def f(a,",
      "      b=\"#x\"):",
      "    return a",
    ].join("\n");
    expect(statements(src).map((s) => [s.line, s.indent, s.text])).toEqual([
      [1, 0, '"""Module doc.\nimport not_an_import\n"""'.replace(/\s+/g, " ")],
      [4, 0, "import os"],
      [5, 0, "from a.b import (c, d as e)"],
      [7, 0, "x = 1"],
      [7, 0, "import y"],
      [8, 0, "z = 'import q' + '#'"],
      [10, 0, 'def f(a, b="#x"):'],
      [12, 4, "return a"],
    ]);
  });
});

describe("importsOf", () => {
  it("reads import, from-import, relative imports and imports inside functions; not strings", () => {
    const src = [
      "import a.b as ab, c",
      "from . import x, y as z",
      "from ..pkg.mod import (f,",
      "    g)",
      "from .m import *",
      "def run():",
      "    import torch.distributed as dist",
      "    from pkg import comm",
      "s = 'from q import r'",
      "try: import maybe",
      "if not re: import re",
      "except ImportError: pass",
    ].join("\n");
    expect(importsOf(src).map((r) => [r.level, r.module, r.names])).toEqual([
      [0, "a.b", []],
      [0, "c", []],
      [1, "", ["x", "y"]],
      [2, "pkg.mod", ["f", "g"]],
      [1, "m", []],
      [0, "torch.distributed", []],
      [0, "pkg", ["comm"]],
      [0, "maybe", []],
      [0, "re", []],
    ]);
  });
});

describe("importGraph and reachable: which tests reach a gated module", () => {
  const sources = new Map<string, string>([
    ["pkg/__init__.py", "from .api import public\n"],
    ["pkg/api.py", "from pkg.comm import all_reduce_sum as public\n"],
    ["pkg/comm.py", "import torch.distributed as dist\nfrom . import util\n"],
    ["pkg/util.py", ""],
    ["pkg/other.py", "import os\n"],
    ["src/lib/__init__.py", ""],
    ["src/lib/deep.py", "from ..lib import tools\n"],
    ["src/lib/tools.py", ""],
    ["tests/helpers.py", "from pkg.comm import all_reduce_sum\n"],
    ["tests/test_direct.py", "def test_it():\n    from pkg.comm import all_reduce_sum\n"],
    ["tests/test_helper.py", "import helpers\n"],
    ["tests/test_package.py", "import pkg\n"],
    ["tests/test_other.py", "import pkg.other\n"],
    ["tests/test_src.py", "from lib.deep import x\n"],
  ]);
  const graph = importGraph(sources, ["", "src", "tests"]);

  it("resolves absolute imports under the roots, each package's __init__ on the way, submodules named in from-imports, and relative ones", () => {
    expect([...(graph.get("tests/test_direct.py") ?? [])].sort()).toEqual(["pkg/__init__.py", "pkg/comm.py"]);
    expect([...(graph.get("pkg/comm.py") ?? [])]).toEqual(["pkg/util.py"]);
    expect([...(graph.get("tests/test_helper.py") ?? [])]).toEqual(["tests/helpers.py"]);
    expect([...(graph.get("src/lib/deep.py") ?? [])].sort()).toEqual(["src/lib/__init__.py", "src/lib/tools.py"]);
    expect([...(graph.get("tests/test_src.py") ?? [])].sort()).toEqual(["src/lib/__init__.py", "src/lib/deep.py"]);
  });

  it("follows imports transitively, through helpers and package __init__ files, with the chain that got there", () => {
    const via = (test: string) => chainTo(reachable(graph, test), "pkg/comm.py");
    expect(via("tests/test_direct.py")).toEqual(["tests/test_direct.py", "pkg/comm.py"]);
    expect(via("tests/test_helper.py")).toEqual(["tests/test_helper.py", "tests/helpers.py", "pkg/comm.py"]);
    expect(via("tests/test_package.py")).toEqual(["tests/test_package.py", "pkg/__init__.py", "pkg/api.py", "pkg/comm.py"]);
    // importing pkg.other runs pkg/__init__.py, which imports comm: a real dependency, found as one
    expect(via("tests/test_other.py")).toEqual(["tests/test_other.py", "pkg/__init__.py", "pkg/api.py", "pkg/comm.py"]);
    expect(via("tests/test_src.py")).toEqual([]);
  });
});
