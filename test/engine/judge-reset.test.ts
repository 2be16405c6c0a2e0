import { describe, expect, it } from "vitest";
import { planJudgeReset, pytestSection } from "../../src/engine/judge-reset.js";

const f = (path: string, content: string | null, baseContent: string | null = null) => ({ path, content, baseContent });

describe("planJudgeReset", () => {
  const globs = ["tests/**"];
  it("restores edited and deleted official tests, removes added ones", () => {
    const plan = planJudgeReset([f("tests/test_a.py", "forged", "real"), f("tests/test_b.py", null, "real"), f("tests/test_new.py", "x")], globs);
    expect(plan.map((a) => [a.path, a.action])).toEqual([
      ["tests/test_a.py", "restored"],
      ["tests/test_b.py", "restored"],
      ["tests/test_new.py", "removed"],
    ]);
  });

  it("removes test-time hooks the base lacks", () => {
    const plan = planJudgeReset(
      [f("conftest.py", "x"), f("pkg/conftest.py", "x"), f("sitecustomize.py", "x"), f("lib/usercustomize.py", "x"), f("evil.pth", "x"), f("pytest.ini", "[pytest]\naddopts=-p evil")],
      globs,
    );
    expect(plan.map((a) => a.action)).toEqual(["removed", "removed", "removed", "removed", "removed", "removed"]);
  });

  it("keeps ordinary source changes and unrelated config edits", () => {
    const plan = planJudgeReset(
      [f("pkg/optim.py", "new", "old"), f("pyproject.toml", "[project]\nname='x'\nversion='2'\n[tool.pytest.ini_options]\nx=1\n", "[project]\nname='x'\nversion='1'\n[tool.pytest.ini_options]\nx=1\n")],
      globs,
    );
    expect(plan).toEqual([]);
  });

  it("restores a config file whose pytest section changed", () => {
    const plan = planJudgeReset([f("setup.cfg", "[metadata]\n[tool:pytest]\naddopts = -p evil\n", "[metadata]\n")], globs);
    expect(plan).toMatchObject([{ path: "setup.cfg", action: "restored" }]);
  });

  it("extracts pytest sections", () => {
    expect(pytestSection("[a]\nx=1\n[pytest]\naddopts = -q\n\n[b]\ny=2")).toBe("[pytest]\naddopts = -q");
    expect(pytestSection("[a]\n")).toBe("");
  });
});

describe("planJudgeReset for a repository gate's PR", () => {
  it("keeps the repository's own tests, conftest.py and pytest configuration, and still removes start-up hooks", () => {
    const changed = [
      { path: "tests/test_a.py", content: "def test_a(): pass\n", baseContent: "def test_a(): assert 0\n" },
      { path: "tests/conftest.py", content: "import pytest\n", baseContent: null },
      { path: "pytest.ini", content: "[pytest]\naddopts = -q\n", baseContent: "[pytest]\n" },
      { path: "pyproject.toml", content: "[tool.pytest.ini_options]\nx = 1\n", baseContent: "" },
      { path: "sitecustomize.py", content: "import os\n", baseContent: null },
      { path: "evil.pth", content: "import os\n", baseContent: null },
    ];
    expect(planJudgeReset(changed, [], [], true).map((a) => [a.path, a.action])).toEqual([
      ["sitecustomize.py", "removed"],
      ["evil.pth", "removed"],
    ]);
  });
});
