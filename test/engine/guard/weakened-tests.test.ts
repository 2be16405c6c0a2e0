import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { guardChecks } from "../../../src/core/guard/weakened-tests.js";
import { HarnessError } from "../../../src/engine/errors.js";
import { weakenedTestChecks } from "../../../src/engine/guard/weakened-tests.js";
import { tmp } from "../../helpers.js";

const PY = "/usr/bin/python3";
const BASE = `import pytest

@pytest.mark.parametrize("world", [1, 2, 4])
def test_reduce(world):
    assert reduce(world) == world
    assert_close(grad(world), ref(world), atol=1e-6, rtol=0)

def test_errors():
    with pytest.raises(ValueError, match="size"):
        bad()
`;

function trees(head: string, extraHead: Record<string, string> = {}): { base: string; head: string } {
  const root = tmp("pg-guard-");
  const write = (side: string, files: Record<string, string>) => {
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, side, rel)), { recursive: true });
      writeFileSync(join(root, side, rel), text);
    }
  };
  write("base", { "tests/test_dist.py": BASE, "pytest.ini": "[pytest]\naddopts = -q\n" });
  write("head", { "tests/test_dist.py": head, "pytest.ini": "[pytest]\naddopts = -q\n", ...extraHead });
  return { base: join(root, "base"), head: join(root, "head") };
}

describe("the weakened-test guard as checks", () => {
  it("passes, with the counts, when the head keeps every base test", async () => {
    const t = trees(BASE + "\ndef test_new():\n    assert True\n");
    const checks = await weakenedTestChecks({ baseDir: t.base, headDir: t.head, tests: ["tests/**"], python: PY });
    expect(checks).toHaveLength(1);
    expect(checks[0]).toMatchObject({ id: "weakened-tests", category: "structure", status: "passed", measured: { baseTests: 2, headTests: 3, baseFiles: 1 } });
  });

  it("names each weakened test with its file and line, as failed structure checks", async () => {
    const head = BASE.replace("[1, 2, 4]", "[1]").replace("atol=1e-6", "atol=1e-1").replace('pytest.raises(ValueError, match="size")', "pytest.raises(Exception)");
    const t = trees(head, { "pytest.ini": "[pytest]\naddopts = -q --deselect tests/test_dist.py::test_errors\n" });
    const checks = await weakenedTestChecks({ baseDir: t.base, headDir: t.head, tests: ["tests/**"], python: PY });
    const byKind = Object.fromEntries(checks.map((c) => [c.measured?.kind, c]));
    expect(checks.every((c) => c.status === "failed" && c.category === "structure")).toBe(true);
    expect(byKind.narrowed).toMatchObject({ location: { path: "tests/test_dist.py", line: 3 } });
    expect(byKind.narrowed?.message).toMatch(/^tests\/test_dist.py::test_reduce: .*lost 2 of 3 cases: 2, 4/);
    expect(byKind["tolerance-loosened"]?.message).toContain("from 1e-6 to 1e-1");
    expect(byKind["exception-widened"]?.location).toEqual({ path: "tests/test_dist.py", line: 9 });
    expect(byKind.deselected).toMatchObject({ location: { path: "pytest.ini", line: 2 } });
    expect(byKind.deselected?.message).toContain("--deselect tests/test_dist.py::test_errors");
  });

  it("reads a tolerance moved into a constant of the tree: the same value passes, a looser one names both", async () => {
    const head = BASE.replace("import pytest\n", "import pytest\nfrom tests.constants import GRAD_ATOL\n").replace("atol=1e-6", "atol=GRAD_ATOL");
    const same = trees(head, { "tests/constants.py": "GRAD_ATOL = 1e-6\n" });
    const passed = await weakenedTestChecks({ baseDir: same.base, headDir: same.head, tests: ["tests/test_dist.py"], python: PY });
    expect(passed.map((c) => [c.id, c.status])).toEqual([["weakened-tests", "passed"]]);
    const looser = trees(head, { "tests/constants.py": "GRAD_ATOL = 1e-2\n" });
    const [check, ...rest] = await weakenedTestChecks({ baseDir: looser.base, headDir: looser.head, tests: ["tests/test_dist.py"], python: PY });
    expect(rest).toEqual([]);
    expect(check).toMatchObject({ id: "weakened-tests.tolerance-loosened-1", status: "failed", location: { path: "tests/test_dist.py", line: 7 } });
    expect(check?.message).toContain("atol from 1e-6 to 1e-2 (GRAD_ATOL): now `assert_close(grad(world), ref(world), atol=GRAD_ATOL, rtol=0)`");
  });

  it("gives one failed check per weakened check, quoting what the head's line now does", async () => {
    const base = "import torch\n\ndef test_out():\n    assert torch.allclose(out(), ref())\n";
    const t = trees(BASE, { "tests/test_out.py": base.replace("out(), ref()", "out()[0], ref()") });
    writeFileSync(join(t.base, "tests/test_out.py"), base);
    const checks = await weakenedTestChecks({ baseDir: t.base, headDir: t.head, tests: ["tests/test_out.py"], python: PY });
    expect(checks.map((c) => [c.id, c.location])).toEqual([["weakened-tests.assertion-removed-1", { path: "tests/test_out.py", line: 4 }]]);
    expect(checks[0]?.message).toBe("tests/test_out.py::test_out: test_out now checks `torch.allclose(out()[0], ref())` in place of the base's `torch.allclose(out(), ref())` (base line 4)");
  });

  it("reports what the task allows as passed checks, never dropping it", async () => {
    const t = trees(BASE.replace("[1, 2, 4]", "[1, 2]"));
    const checks = await weakenedTestChecks({ baseDir: t.base, headDir: t.head, tests: ["tests/**"], allow: ["tests/test_dist.py::test_reduce"], python: PY });
    expect(checks.map((c) => [c.id, c.status])).toEqual([["weakened-tests.allowed-1", "passed"], ["weakened-tests", "passed"]]);
    expect(checks[0]?.message).toMatch(/^allowed by the task: .*test_reduce/);
  });

  it("is a harness error, not a pass, when the guard cannot run", async () => {
    const t = trees(BASE);
    await expect(weakenedTestChecks({ baseDir: t.base, headDir: join(t.head, "missing"), tests: ["tests/**"], python: PY })).rejects.toThrow(HarnessError);
    await expect(weakenedTestChecks({ baseDir: t.base, headDir: t.head, tests: ["tests/**"], python: "/nonexistent/python" })).rejects.toThrow(/guard failed/);
  });

  it("keeps a location only when it stays inside the submission", () => {
    const checks = guardChecks({ findings: [{ kind: "deleted", test: "x", file: "../etc/passwd", line: 1, message: "m" }], allowed: [], files: { base: 1, head: 0 }, tests: { base: 1, head: 0 } }, 0.1);
    expect(checks[0]?.location).toBeNull();
  });
});
