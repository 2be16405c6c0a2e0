import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EvaluationResultSchema, type EvaluationResult } from "../../src/core/result.js";
import { evaluate } from "../../src/engine/evaluate.js";
import { loadTask } from "../../src/engine/task-load.js";
import { KIT, tmp } from "../helpers.js";
import { cli } from "./run-cli.js";
import { EXTRA_ALL_REDUCE, gateInitRepo, HONEST, LEAK, prBranch } from "./gate-init-repo.js";

const SPAWNING = /^test-(traffic|memory|time)\.test_comm\.py-test_all_reduce_two_ranks-[0-9a-f]{8}$/;
const LAUNCHING = /^test-(traffic|memory|time)\.test_launch\.py-test_all_reduce_in_launched_ranks-[0-9a-f]{8}$/;

/** gate init on the test repository, into a folder named for the gate. */
async function init(dir: string, ...flags: string[]) {
  const out = join(tmp("pg-gate-init-out-"), "dcomm-gate");
  const res = await cli("gate", "init", dir, "--paths", "dcomm/comm.py", "--out", out, ...flags);
  return { task: out, code: res.code, stdout: res.out, err: res.err };
}

describe("probegate gate init: a repository gate from a repository's tree", () => {
  it("maps the gated module to the tests that import it (directly, through a helper), declares the repository's requirements with the pack's pins, states the public interface, and validates", async () => {
    const r = gateInitRepo();
    const { task: out, code, stdout, err } = await init(r.dir);
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(stdout).toMatch(/probegate validate .*dcomm-gate: ok/);
    const task = loadTask(out);
    expect(task.spec.base).toEqual({ pr: true });
    expect(task.spec.official.select).toEqual({ tests: [], fromPaths: [{ paths: ["dcomm/comm.py", "tests/test_avg.py", "tests/test_comm.py", "tests/test_launch.py"], tests: ["tests/test_avg.py", "tests/test_comm.py", "tests/test_launch.py"] }] });
    expect(task.spec.official.files).toEqual(["tests/test_avg.py", "tests/test_comm.py", "tests/test_launch.py"]);
    expect(task.spec.environment?.fromTree).toEqual({ requirements: ["requirements.txt"], pins: ["torch==2.15.0", "pytest==9.2.0"], exclude: [] });
    const gate = readFileSync(join(out, "GATE.md"), "utf8");
    expect(stdout).toContain(gate);
    expect(gate).toContain("- `tests/test_avg.py`: through `tests/helpers.py` → `dcomm/comm.py`");
    expect(gate).toContain("requirements-docs.txt: left out, named for another purpose than the tests");
    expect(gate).toContain("pinned torch==2.15.0, over the repository's torch>=1.13 (requirements.txt:1)");
    expect(gate).toContain("1 test file imports none of the gated modules (`tests/test_fmt.py`)");
    const prompt = readFileSync(join(out, "prompt.md"), "utf8");
    expect(prompt).toContain("- `def all_reduce_sum(tensor: torch.Tensor, group=None) -> torch.Tensor`\n- `class Averager`\n  - `def __init__(self, world: int)`\n  - `def average(self, tensor)`");
    expect(prompt).not.toContain("_private");
    expect(readFileSync(join(out, "probes", "probe_tests.py"), "utf8")).toContain("gate_tests(SELECTION, GATED, CHECKS");
    expect((await cli("validate", out)).code).toBe(0);
  }, 60_000);

  it("says what the repository lacks and which flag to pass", async () => {
    const noTests = gateInitRepo({ "tests/test_comm.py": null, "tests/test_avg.py": null, "tests/test_fmt.py": null, "tests/test_launch.py": null });
    let res = await init(noTests.dir);
    expect(res.code).toBe(2);
    expect(res.err).toMatch(/the repository has no tests: no file named test_\*\.py or \*_test\.py under testpaths tests .*Pass --tests <globs>/);

    const r = gateInitRepo({ "requirements.txt": null, "requirements-docs.txt": null });
    res = await init(r.dir);
    expect(res.code).toBe(2);
    expect(res.err).toMatch(/declares no dependencies for its tests: .*pyproject\.toml's \[project\] table declares no dependencies\. Pass --requirements <files>/);

    res = await init(r.dir, "--paths", "docs/**");
    expect(res.err).toMatch(/--paths docs\/\*\* matches no file of the tree \(its packages: dcomm\)/);
    const scripts = gateInitRepo({ "tools/run-me/go.py": "print(1)\n" });
    let other = await cli("gate", "init", scripts.dir, "--paths", "tools/**", "--out", join(tmp("pg-gate-init-out-"), "x-gate"));
    expect(other.err).toMatch(/no importable package: .*tools\/run-me\/go\.py.* --src <folder>/);
    other = await cli("gate", "init", r.dir, "--paths", "dcomm/fmt.py", "--tests", "tests/test_comm.py", "--out", join(tmp("pg-gate-init-out-"), "x-gate"));
    expect(other.err).toMatch(/no test of the repository imports the gated modules \(dcomm\.fmt\).*Pass --tests <globs>/);
  }, 60_000);
});

async function evalPr(task: string, dir: string, base: string, head: string): Promise<EvaluationResult> {
  const t0 = performance.now();
  // The runner's Debian torch (1.13, gloo): the gate's environment.fromTree is the PyPI torch, built elsewhere (tree-gate.test).
  const result = await evaluate({ task: loadTask(task), submission: { kind: "git", repo: dir, ref: head }, prBase: base, kitDir: KIT, python: "/usr/bin/python3", gpus: [] });
  console.log(`eval ${head.slice(0, 8)}: ${((performance.now() - t0) / 1000).toFixed(1)} s, ${result.verdict}`);
  expect(EvaluationResultSchema.parse(result)).toEqual(result);
  return result;
}

describe("a generated gate, evaluated by the engine on PRs of the test repository (2 gloo ranks spawned by the test)", () => {
  const r = gateInitRepo();
  const prs = {
    honest: prBranch(r.dir, r.base, "honest", { "dcomm/comm.py": HONEST }),
    extra: prBranch(r.dir, r.base, "extra-all-reduce", { "dcomm/comm.py": EXTRA_ALL_REDUCE }),
    leak: prBranch(r.dir, r.base, "leak", { "dcomm/comm.py": LEAK }),
  };
  let task = "";
  const gate = async () => (task ||= (await init(r.dir)).task);

  it("resolves an honest PR: its tests pass, and every test's traffic, memory and time match the base's", async () => {
    const result = await evalPr(await gate(), r.dir, r.base, prs.honest);
    const probes = result.probes.map((p) => [p.id, p.status]);
    expect(result.verdict, JSON.stringify(result.probes, null, 1)).toBe("resolved");
    expect(probes.filter(([id]) => SPAWNING.test(String(id)))).toEqual([
      [expect.stringMatching(/^test-traffic/), "passed"],
      [expect.stringMatching(/^test-memory/), "passed"],
      [expect.stringMatching(/^test-time/), "passed"],
    ]);
    expect(probes).toContainEqual(["interface-kept", "passed"]);
    // behaviour by record and replay, through the engine and the sandbox: the test's own call of local_sum
    expect(probes).toContainEqual([expect.stringMatching(/^test-calls\.dcomm\.comm\.local_sum-[0-9a-f]{8}$/), "passed"]);
    const traffic = result.probes.find((p) => p.id.startsWith("test-traffic.test_comm"));
    expect(traffic?.measured).toMatchObject({ base_all_reduce_calls: 4, head_all_reduce_calls: 4 });
    // each test's memory of record, read by the probe's process from outside the test's (its spawned ranks too), in the sandbox
    const memory = result.probes.find((p) => p.id.startsWith("test-memory.test_comm"));
    expect(memory?.measured).toMatchObject({ base_outside_descendants: 2, head_outside_descendants: 2, head_outside_exact: true });
    // ranks the test starts with subprocess, metered by the kit's sitecustomize in each rank
    expect(probes.filter(([id]) => LAUNCHING.test(String(id))).map(([, s]) => s)).toEqual(["passed", "passed", "passed"]);
    const launched = result.probes.find((p) => p.id.startsWith("test-traffic.test_launch"));
    expect(launched?.measured).toMatchObject({ base_all_reduce_calls: 2, head_all_reduce_calls: 2 });
  }, 600_000);

  it("rejects a PR that adds an all_reduce, with a traffic check naming the test and the numbers", async () => {
    const result = await evalPr(await gate(), r.dir, r.base, prs.extra);
    expect(result.official?.passed).toBe(true);
    expect(result.verdict).toBe("probe-rejected");
    const traffic = result.probes.find((p) => p.id.startsWith("test-traffic.test_comm"));
    expect(traffic).toMatchObject({ category: "traffic", status: "failed", location: { path: "tests/test_comm.py", line: 16 } });
    expect(traffic?.message).toBe("head's collectives differ from base's per run: +4 all_reduce calls per run (4 → 8), bytes 16,777,216 → 33,554,432 (+16,777,216 B), new in head at dcomm/comm.py:9 in all_reduce_sum (4 calls in all)");
    expect(traffic?.measured).toMatchObject({ base_all_reduce_calls: 4, head_all_reduce_calls: 8 });
    expect(result.probes.find((p) => p.id.startsWith("test-memory.test_comm"))?.status).toBe("passed");
    const launched = result.probes.find((p) => p.id.startsWith("test-traffic.test_launch"));
    expect(launched).toMatchObject({ category: "traffic", status: "failed" });
    expect(launched?.message).toMatch(/^head's collectives differ from base's per run: \+2 all_reduce calls per run \(2 → 4\), bytes 2,097,152 → 4,194,304 .*new in head at dcomm\/comm\.py:9 in all_reduce_sum/);
  }, 600_000);

  it("rejects a PR that leaks a buffer (a list growing with tensors), with a memory check", async () => {
    const result = await evalPr(await gate(), r.dir, r.base, prs.leak);
    expect(result.official?.passed).toBe(true);
    expect(result.verdict).toBe("probe-rejected");
    const memory = result.probes.find((p) => p.id.startsWith("test-memory.test_comm"));
    expect(memory, JSON.stringify(result.probes, null, 1)).toMatchObject({ category: "memory", status: "failed" });
    expect(memory?.message).toMatch(/^head holds 1\d\.\d MiB more than base at its peak/);
    expect(result.probes.find((p) => p.id.startsWith("test-traffic.test_comm"))?.status).toBe("passed");
  }, 600_000);
});
