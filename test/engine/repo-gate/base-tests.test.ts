import { describe, expect, it } from "vitest";
import type { EvaluationResult } from "../../../src/core/result.js";
import { evaluate } from "../../../src/engine/evaluate.js";
import { KIT, tmp } from "../../helpers.js";
import { gateTask, OPS, repo, TEST } from "./gate-repo.js";

/** A head whose code is broken for negative numbers: the base's test (-1, 1) catches it. */
const BROKEN = "def add(a, b):\n    return a + b if a >= 0 else a - b\n";

async function run(head: Record<string, string | null>, baseFiles: Record<string, string> = {}): Promise<EvaluationResult> {
  const r = repo(head, baseFiles);
  return evaluate({ task: gateTask(), submission: { kind: "git", repo: r.dir, ref: r.head }, prBase: r.base, kitDir: KIT });
}

/** A test the head adds, so its run is not all skips (that would fail officially on its own). */
const SMOKE = "\n\ndef test_smoke():\n    assert add(1, 1) == 2\n";

const failed = (res: EvaluationResult) => res.probes.filter((p) => p.status === "failed").map((p) => p.id);

describe("a repository gate judges the head by the base's own tests, test by test", () => {
  it("importorskip in a test body: skipped at the head, and the base's test fails against the head's code", async () => {
    const res = await run({ "calc/ops.py": BROKEN, "tests/test_ops.py": TEST.replace("def test_add(a, b):\n", 'def test_add(a, b):\n    pytest.importorskip("no_such_module_here")\n') + SMOKE });
    expect(res.official?.passed).toBe(true);
    expect(res.verdict).toBe("probe-rejected");
    const skipped = res.probes.filter((p) => p.id.startsWith("weakened-tests.skipped-at-run."));
    expect(skipped).toHaveLength(3);
    expect(skipped[2]?.message).toMatch(/tests\/test_ops.py::test_add\[-1-1\] passed at the base and is skipped by importorskip: .*no_such_module_here/);
    const onHead = res.probes.find((p) => p.id.startsWith("base-tests.failed-on-head.test_ops.py-test_add-1-1"));
    expect(onHead).toMatchObject({ category: "functional", status: "failed", location: { path: "tests/test_ops.py" } });
    expect(onHead?.message).toMatch(/fails against the head's code/);
  }, 120_000);

  it("a skipif alias at module level (heavy = pytest.mark.skipif(...); @heavy): skipped at the head, named with its reason", async () => {
    const head = TEST.replace("from calc.ops import add\n", 'from calc.ops import add\n\nheavy = pytest.mark.skipif(True, reason="heavy on CI")\n').replace("@pytest.mark.parametrize", "@heavy\n@pytest.mark.parametrize") + SMOKE;
    const res = await run({ "calc/ops.py": BROKEN, "tests/test_ops.py": head });
    expect(res.verdict).toBe("probe-rejected");
    expect(res.probes.filter((p) => p.id.startsWith("weakened-tests.skipped-at-run.")).map((p) => p.message)).toHaveLength(3);
    expect(res.probes.find((p) => p.id.startsWith("weakened-tests.skipped-at-run."))?.message).toMatch(/skipped: heavy on CI/);
    expect(failed(res).some((id) => id.startsWith("base-tests.failed-on-head."))).toBe(true);
  }, 120_000);

  it("an autouse conftest fixture that loosens the comparison, test file untouched: the base's tests, without it, fail the head", async () => {
    const conftest = "import pytest\n\n@pytest.fixture(autouse=True)\ndef _lenient(request, monkeypatch):\n    monkeypatch.setattr(request.module, 'add', lambda a, b: a + b)\n";
    const res = await run({ "calc/ops.py": BROKEN, "tests/conftest.py": conftest });
    expect(res.official?.passed).toBe(true);
    expect(res.verdict).toBe("probe-rejected");
    expect(failed(res)).toEqual(expect.arrayContaining([expect.stringMatching(/^base-tests\.failed-on-head\.test_ops\.py-test_add-1-1-/)]));
  }, 120_000);

  it("a conftest hook that skips what it collects: skipped at the head, the base's hookless run fails the head", async () => {
    const conftest = "import pytest\n\ndef pytest_collection_modifyitems(config, items):\n    for item in items:\n        if '-1' in item.name:\n            item.add_marker(pytest.mark.skip(reason='flaky'))\n";
    const res = await run({ "calc/ops.py": BROKEN, "tests/conftest.py": conftest });
    expect(res.verdict).toBe("probe-rejected");
    expect(res.probes.find((p) => p.id.startsWith("weakened-tests.skipped-at-run."))?.message).toMatch(/test_add\[-1-1\] .*skipped: flaky/);
    expect(failed(res).some((id) => id.startsWith("base-tests.failed-on-head."))).toBe(true);
  }, 120_000);

  it("a test moved into a class pytest does not collect: no longer collected at the head", async () => {
    const moved = TEST.replace('@pytest.mark.parametrize("a,b", [(1, 2), (2, 3), (-1, 1)])\ndef test_add(a, b):\n    assert add(a, b) == a + b\n', 'class Checks:\n    @pytest.mark.parametrize("a,b", [(1, 2), (2, 3), (-1, 1)])\n    def test_add(self, a, b):\n        assert add(a, b) == a + b\n\ndef test_smoke():\n    assert add(1, 1) == 2\n');
    const res = await run({ "calc/ops.py": BROKEN, "tests/test_ops.py": moved });
    expect(res.verdict).toBe("probe-rejected");
    const gone = res.probes.filter((p) => p.id.startsWith("weakened-tests.not-collected."));
    expect(gone).toHaveLength(3);
    expect(gone[0]?.message).toMatch(/passed at the base and is no longer collected at the head/);
  }, 120_000);

  it("an honest PR on a base whose own test already fails: resolved, that test reported as failing at the base too", async () => {
    const known = `${TEST}\n\ndef test_known_bad():\n    assert add(2, 2) == 5\n`;
    const res = await run({ "calc/ops.py": `${OPS}\n\ndef mul(a, b):\n    return a * b\n` }, { "tests/test_ops.py": known });
    expect(res.verdict, res.reason).toBe("resolved");
    expect(res.official?.failing).toEqual([]);
    expect(res.official?.failingAtBase?.map((t) => t.name)).toEqual(["test_known_bad"]);
    expect(res.probes.find((p) => p.id === "base-tests")?.message).toMatch(/1 failing at the base too \(tests\/test_ops.py::test_known_bad\)/);
  }, 120_000);

  it("a base whose tests cannot be collected: error naming the module, never official-failed", async () => {
    const res = await run({ "calc/ops.py": `${OPS}# touched\n` }, { "tests/conftest.py": "import no_such_yaml_module\n" });
    expect(res.verdict).toBe("error");
    expect(res.reason).toMatch(/the base's own tests cannot run .*ModuleNotFoundError: No module named 'no_such_yaml_module' \(loading tests\/conftest.py\).*not the PR/);
  }, 120_000);

  it("a base whose tests outlast official.timeout: error that names the limit and says to raise it, not to add a package", async () => {
    const slow = "import time\n\ntime.sleep(120)\n";
    const res = await run({ "calc/ops.py": `${OPS}# touched\n` }, { "tests/conftest.py": slow });
    expect(res.verdict).toBe("error");
    expect(res.reason).toMatch(/the base's own tests cannot run .*stopped by the wall-clock limit\. This is the runner or the task's limits, not the PR: .*official\.timeout/);
    expect(res.reason).not.toMatch(/missing package/);
  }, 240_000);

  it("a same-value refactor of a tolerance into a named constant: resolved", async () => {
    const approx = TEST.replace("assert add(a, b) == a + b", "assert add(a, b) == pytest.approx(a + b, abs=1e-9)");
    const named = approx.replace("from calc.ops import add\n", "from calc.ops import add\n\nABS_TOL = 1e-9\n").replace("abs=1e-9", "abs=ABS_TOL");
    const res = await run({ "calc/ops.py": `${OPS}# touched\n`, "tests/test_ops.py": named }, { "tests/test_ops.py": approx });
    expect(res.verdict, JSON.stringify(res.probes.filter((p) => p.status !== "passed"))).toBe("resolved");
    const looser = await run({ "calc/ops.py": `${OPS}# touched\n`, "tests/test_ops.py": named.replace("ABS_TOL = 1e-9", "ABS_TOL = 1e-3") }, { "tests/test_ops.py": approx });
    expect(looser.verdict).toBe("probe-rejected");
    expect(looser.probes.find((p) => p.id.startsWith("weakened-tests.tolerance-loosened"))?.message).toMatch(/1e-9 to 1e-3 \(ABS_TOL\)/);
  }, 120_000);

  it("a head that breaks a base test fails officially, naming it; a second PR on the same base takes the base's outcomes from the cache", async () => {
    // A cache of its own: another test of this file may have judged a base with the same commit id
    // (repositories built within the same second get the same hashes).
    process.env.PROBEGATE_BASE_CACHE_DIR = tmp();
    const first = await run({ "calc/ops.py": BROKEN });
    expect(first.verdict).toBe("official-failed");
    expect(first.official?.failing.map((t) => t.name)).toEqual(["test_add[-1-1]"]);
    expect(first.official?.base).toMatchObject({ cached: false, counts: { passed: 3 } });
    process.env.PROBEGATE_BASE_CACHE_DIR = tmp(); // again: this repository's base may share first's commit id
    const r = repo({ "calc/ops.py": `${OPS}# touched\n` });
    const again = () => evaluate({ task: gateTask(), submission: { kind: "git", repo: r.dir, ref: r.head }, prBase: r.base, kitDir: KIT });
    expect((await again()).official?.base?.cached).toBe(false);
    const second = await again();
    expect(second.official?.base?.cached).toBe(true);
    expect(second.verdict).toBe("resolved");
  }, 180_000);
});
