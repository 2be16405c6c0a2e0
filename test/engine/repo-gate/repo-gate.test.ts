import { describe, expect, it } from "vitest";
import { EvaluationResultSchema } from "../../../src/core/result.js";
import { InputError } from "../../../src/engine/errors.js";
import { evaluate } from "../../../src/engine/evaluate.js";
import { loadTask } from "../../../src/engine/task-load.js";
import { KIT, TINY_TASK } from "../../helpers.js";
import { gateTask, gitIn, OPS, repo, TEST, write } from "./gate-repo.js";

describe("a repository gate: base from the PR, the repository's tests, the weakened-test guard", () => {
  it("evaluates the head against its merge base, runs the tests its paths select, and resolves an honest change", async () => {
    const r = repo({ "calc/ops.py": OPS + "\n\ndef mul(a, b):\n    return a * b\n" });
    const result = await evaluate({ task: gateTask(), submission: { kind: "git", repo: r.dir, ref: r.head }, prBase: r.base, kitDir: KIT });
    expect(EvaluationResultSchema.parse(result)).toEqual(result);
    expect(result.submission).toMatchObject({ sha: r.head, prBase: { asked: r.base, mergeBase: r.base } });
    expect(result.official?.counts.passed).toBe(3);
    expect(result.probes.map((p) => [p.id, p.status])).toEqual([["weakened-tests", "passed"], ["base-tests", "passed"], ["add-works", "passed"]]);
    expect(result.verdict).toBe("resolved");
  }, 120_000);

  it("compares with the merge base when the base branch moved on after the PR branched", async () => {
    const r = repo({ "calc/ops.py": OPS + "# touched\n" });
    gitIn(r.dir, "checkout", "-q", "main");
    write(r.dir, { "tests/test_later.py": "def test_later():\n    assert False\n" });
    gitIn(r.dir, "add", "-A");
    gitIn(r.dir, "commit", "-qm", "main moves on");
    const tip = gitIn(r.dir, "rev-parse", "HEAD");
    const result = await evaluate({ task: gateTask(), submission: { kind: "git", repo: r.dir, ref: r.head }, prBase: tip, kitDir: KIT });
    // The head never had tests/test_later.py: against the tip it would look deleted.
    expect(result.submission.prBase).toEqual({ asked: tip, mergeBase: r.base });
    expect(result.verdict).toBe("resolved");
  }, 120_000);

  it("rejects a head that narrows a base test, naming the test, file and line, though its own tests pass", async () => {
    const r = repo({ "calc/ops.py": "def add(a, b):\n    return a + b if a >= 0 else 0\n", "tests/test_ops.py": TEST.replace(", (-1, 1)", "") });
    const result = await evaluate({ task: gateTask(), submission: { kind: "git", repo: r.dir, ref: r.head }, prBase: r.base, kitDir: KIT });
    expect(result.official?.passed).toBe(true);
    expect(result.verdict).toBe("probe-rejected");
    const weakened = result.probes.find((p) => p.id.startsWith("weakened-tests.narrowed"));
    expect(weakened).toMatchObject({ category: "structure", status: "failed", location: { path: "tests/test_ops.py", line: 4 } });
    expect(weakened?.message).toContain("tests/test_ops.py::test_add");
    expect(weakened?.message).toContain("(-1, 1)");
  }, 120_000);

  it("is an error naming the fields when the PR's paths select no test", async () => {
    const r = repo({ "docs/readme.md": "calc, documented\n" });
    const result = await evaluate({ task: gateTask(), submission: { kind: "git", repo: r.dir, ref: r.head }, prBase: r.base, kitDir: KIT });
    expect(result.verdict).toBe("error");
    expect(result.reason).toMatch(/no repository test is selected .*docs\/readme.md.*official.select.tests/);
  }, 60_000);

  it("leaves out a selected test file the PR renamed away (pytest would stop on it) and says so; the guard sees the move", async () => {
    const OLD = "def test_old():\n    assert 1 + 1 == 2\n";
    const r = repo({ "calc/ops.py": OPS + "# touched\n", "tests/test_old.py": null, "tests/test_new.py": OLD }, { "tests/test_old.py": OLD });
    const select = `    tests: ["tests/test_ops.py"]
    fromPaths:
      - paths: ["tests/test_old.py", "tests/test_new.py"]
        tests: ["tests/test_old.py", "tests/test_new.py"]`;
    const logs: string[] = [];
    const result = await evaluate({ task: gateTask(undefined, select), submission: { kind: "git", repo: r.dir, ref: r.head }, prBase: r.base, kitDir: KIT, onEvent: (e) => void (e.type === "log" && logs.push(e.text)) });
    expect(result.official?.counts.passed).toBe(4);
    expect(result.verdict).toBe("resolved");
    expect(logs.join("")).toContain("not in the head, left to the guard: tests/test_old.py");
  }, 120_000);

  it("refuses --pr-base where it does not belong, and asks for it where it does", async () => {
    const r = repo({ "calc/ops.py": OPS + "# touched\n" });
    await expect(evaluate({ task: gateTask(), submission: { kind: "git", repo: r.dir, ref: r.head }, kitDir: KIT })).rejects.toThrow(/repository gate .*--pr-base <sha>/);
    await expect(evaluate({ task: loadTask(TINY_TASK), submission: { kind: "git", repo: r.dir, ref: r.head }, prBase: r.base, kitDir: KIT })).rejects.toThrow(/--pr-base is for repository gates/);
    await expect(evaluate({ task: gateTask(), submission: { kind: "folder", path: r.dir }, prBase: r.base, kitDir: KIT })).rejects.toThrow(/repo@sha/);
  }, 60_000);

  it("refuses swapped commits and a base of another history, naming both", async () => {
    const r = repo({ "calc/ops.py": OPS + "# touched\n" });
    const swapped = evaluate({ task: gateTask(), submission: { kind: "git", repo: r.dir, ref: r.base }, prBase: r.head, kitDir: KIT });
    await expect(swapped).rejects.toThrow(InputError);
    await expect(evaluate({ task: gateTask(), submission: { kind: "git", repo: r.dir, ref: r.base }, prBase: r.head, kitDir: KIT })).rejects.toThrow(/comes after the head .*swapped/);
    const other = repo({});
    await expect(evaluate({ task: gateTask(), submission: { kind: "git", repo: r.dir, ref: r.head }, prBase: other.head, kitDir: KIT })).rejects.toThrow(/not a commit of/);
    gitIn(r.dir, "checkout", "-q", "--orphan", "unrelated");
    gitIn(r.dir, "commit", "-qm", "another history");
    const unrelated = gitIn(r.dir, "rev-parse", "HEAD");
    await expect(evaluate({ task: gateTask(), submission: { kind: "git", repo: r.dir, ref: r.head }, prBase: unrelated, kitDir: KIT })).rejects.toThrow(/share no history/);
  }, 60_000);

  it("runs differential probes on base and head in the sandbox and reports the difference in numbers", async () => {
    const SYNC = "import torch.distributed as dist\n\ndef sync(t):\n    dist.all_reduce(t)\n    return t\n";
    const r = repo({ "calc/sync.py": SYNC.replace("    dist.all_reduce(t)\n", "    dist.all_reduce(t)\n    dist.all_reduce(t)\n") }, { "calc/sync.py": SYNC });
    const probe = `import torch
from probegate_probe.differential import differential

def scenario(rank, world, rep):
    from calc import sync
    return sync.sync(torch.ones(1024) * (rank + 1))

if __name__ == "__main__":
    sides = differential(scenario, world_size=2, measure=("traffic", "outputs"))
    sides.check_traffic("sync-traffic", per="step")
    sides.check_outputs("sync-outputs")
`;
    const task = gateTask({ "probes/probe_traffic.py": probe });
    const result = await evaluate({ task, submission: { kind: "git", repo: r.dir, ref: r.head }, prBase: r.base, kitDir: KIT });
    const traffic = result.probes.find((p) => p.id === "sync-traffic");
    expect(traffic?.status, JSON.stringify(result.probes)).toBe("failed");
    expect(traffic?.message).toBe("head's collectives differ from base's per step: +1 all_reduce call per step (1 → 2), bytes 4,096 → 8,192 (+4,096 B), new in head at calc/sync.py:5 in sync (1 call in all)");
    // no location in the probe: the check points at the head's new call site
    expect(traffic?.location).toEqual({ path: "calc/sync.py", line: 5 });
    expect(traffic?.measured).toMatchObject({ base_all_reduce_calls: 1, head_all_reduce_calls: 2 });
    expect(result.probes.find((p) => p.id === "sync-outputs")?.status).toBe("failed");
    expect(result.verdict).toBe("probe-rejected");
  }, 180_000);
});
