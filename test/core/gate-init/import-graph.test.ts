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
  const runs = importGraph(sources, ["", "src", "tests"], "runs");
  const uses = importGraph(sources, ["", "src", "tests"]);
  const edges = (graph: typeof uses, file: string) => [...(graph.get(file) ?? [])].sort();

  it("runs: resolves absolute imports under the roots, each package's __init__ on the way, submodules named in from-imports, and relative ones", () => {
    expect(edges(runs, "tests/test_direct.py")).toEqual(["pkg/__init__.py", "pkg/comm.py"]);
    expect(edges(runs, "pkg/comm.py")).toEqual(["pkg/util.py"]);
    expect(edges(runs, "tests/test_helper.py")).toEqual(["tests/helpers.py"]);
    expect(edges(runs, "src/lib/deep.py")).toEqual(["src/lib/__init__.py", "src/lib/tools.py"]);
    expect(edges(runs, "tests/test_src.py")).toEqual(["src/lib/__init__.py", "src/lib/deep.py"]);
  });

  it("runs: follows imports transitively, through helpers and every package __init__ an import runs, with the chain that got there", () => {
    const via = (test: string) => chainTo(reachable(runs, test), "pkg/comm.py");
    expect(via("tests/test_direct.py")).toEqual(["tests/test_direct.py", "pkg/comm.py"]);
    expect(via("tests/test_helper.py")).toEqual(["tests/test_helper.py", "tests/helpers.py", "pkg/comm.py"]);
    expect(via("tests/test_package.py")).toEqual(["tests/test_package.py", "pkg/__init__.py", "pkg/api.py", "pkg/comm.py"]);
    // importing pkg.other runs pkg/__init__.py, which imports comm
    expect(via("tests/test_other.py")).toEqual(["tests/test_other.py", "pkg/__init__.py", "pkg/api.py", "pkg/comm.py"]);
    expect(via("tests/test_src.py")).toEqual([]);
  });

  it("uses (the default): an import is an edge to what it names, not to the packages it runs on the way", () => {
    expect(edges(uses, "tests/test_direct.py")).toEqual(["pkg/comm.py"]);
    expect(edges(uses, "pkg/comm.py")).toEqual(["pkg/util.py"]);
    expect(edges(uses, "src/lib/deep.py")).toEqual(["src/lib/tools.py"]);
    expect(edges(uses, "tests/test_package.py")).toEqual(["pkg/__init__.py"]); // `import pkg`: whatever pkg binds
    const via = (test: string) => chainTo(reachable(uses, test), "pkg/comm.py");
    expect(via("tests/test_helper.py")).toEqual(["tests/test_helper.py", "tests/helpers.py", "pkg/comm.py"]);
    expect(via("tests/test_package.py")).toEqual(["tests/test_package.py", "pkg/__init__.py", "pkg/api.py", "pkg/comm.py"]);
    expect(via("tests/test_other.py")).toEqual([]); // it uses pkg.other only: comm is run by pkg/__init__.py, not tested
  });

  it("uses: a name taken from a package goes to the module its __init__ re-exports it from, through re-exports of re-exports", () => {
    const tree = new Map<string, string>([
      ["lib/__init__.py", "from .timer import Timer\nfrom .dist import get_rank, barrier\nfrom .more import *\nVERSION = 1\nfrom lib.nested import deep_name\n"],
      ["lib/timer.py", "import time\n"],
      ["lib/dist.py", "import torch.distributed\n"],
      ["lib/more.py", ""],
      ["lib/nested/__init__.py", "from .impl import deep_name\n"],
      ["lib/nested/impl.py", ""],
      ["tests/test_timer.py", "from lib import Timer\n"],
      ["tests/test_rank.py", "from lib import Timer, get_rank\n"],
      ["tests/test_version.py", "from lib import VERSION\n"],
      ["tests/test_deep.py", "from lib import deep_name\n"],
      ["tests/test_rel.py", "from . import helper\n"],
      ["tests/helper.py", ""],
    ]);
    const g = importGraph(tree, ["", "tests"]);
    expect(edges(g, "tests/test_timer.py")).toEqual(["lib/timer.py"]);
    expect(edges(g, "tests/test_rank.py")).toEqual(["lib/dist.py", "lib/timer.py"]);
    expect(edges(g, "tests/test_version.py")).toEqual(["lib/__init__.py"]); // defined there: the package is the edge, every import of it
    expect(edges(g, "tests/test_deep.py")).toEqual(["lib/nested/impl.py"]);
    expect(chainTo(reachable(g, "tests/test_timer.py"), "lib/dist.py")).toEqual([]);
    expect(chainTo(reachable(g, "tests/test_version.py"), "lib/dist.py")).toEqual(["tests/test_version.py", "lib/__init__.py", "lib/dist.py"]);
  });
});
