import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EvaluationResultSchema, type EvaluationResult } from "../../../src/core/result.js";
import { evaluate, type EvaluationEvent } from "../../../src/engine/evaluate.js";
import { loadTask } from "../../../src/engine/task-load.js";
import { KIT, tmp } from "../../helpers.js";
import { isolatedStore, needsUvAndPypi } from "./tiny-env.js";
import { repo as gateRepo, write } from "../repo-gate/gate-repo.js";

const skip = await needsUvAndPypi();

// As Megatron-LM's: the repository's conftest imports yaml, which only its requirements provide.
const CONFTEST = "import yaml\n\n\ndef pytest_configure(config):\n    assert yaml.safe_load('a: 1') == {'a': 1}\n";
const TEST = "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

/** A repository whose base declares its requirements, and a PR branch changing `head` files. */
const repo = (base: Record<string, string>, head: Record<string, string>) => gateRepo(head, { "tests/conftest.py": CONFTEST, "tests/test_ops.py": TEST, ...base });

function gateTask(): ReturnType<typeof loadTask> {
  const dir = join(tmp("pg-tree-gate-task-"), "calc-gate");
  write(dir, {
    "task.yml": `id: calc-gate
title: Gate calc PRs, in the environment the repository declares
area: other
base: { pr: true }
gpus: 0
environment:
  python: ">=3.11,<3.12"
  fromTree:
    requirements: ["requirements.txt"]
    pins: ["pytest==9.2.0"]
official:
  command: ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml={junit}", "{tests}"]
  timeout: 120
  files: ["tests/**"]
  select:
    tests: ["tests/test_ops.py"]
probes:
  path: probes
  timeout: 30
limits: { wallClock: 600, memory: 2GiB, outputBytes: 1MiB }
`,
    "prompt.md": "Any change to calc.\n",
    "probes/probe_functional.py": `import json, os, yaml
ok = yaml.safe_load("x: 2") == {"x": 2}
open(os.environ["PROBEGATE_RESULTS"], "a").write(json.dumps({"id": "yaml-loads", "category": "functional", "status": "passed" if ok else "failed", "message": ""}) + "\\n")
`,
  });
  return loadTask(dir);
}

async function run(r: { dir: string; base: string; head: string }): Promise<{ result: EvaluationResult; logs: string[] }> {
  const logs: string[] = [];
  const onEvent = (e: EvaluationEvent) => void (e.type === "log" && e.source === "environment" && logs.push(e.text));
  const result = await evaluate({ task: gateTask(), submission: { kind: "git", repo: r.dir, ref: r.head }, prBase: r.base, kitDir: KIT, gpus: [], onEvent });
  expect(EvaluationResultSchema.parse(result)).toEqual(result);
  return { result, logs };
}

describe.skipIf(skip !== "")(`a repository gate whose environment follows the merge base (environment.fromTree)${skip}`, () => {
  const store = isolatedStore();

  it("runs the repository's tests, whose conftest imports what the base's requirements.txt declares, green; a second PR on the same requirements reuses the build", async () => {
    const r = repo({ "requirements.txt": "pyyaml==6.0.2\n" }, { "calc/ops.py": "def add(a, b):\n    return b + a\n" });
    const { result, logs } = await run(r);
    expect(result.error ?? null).toBeNull();
    expect(result.verdict).toBe("resolved");
    expect(result.official?.counts.passed).toBe(1);
    expect(result.probes.map((p) => [p.id, p.status])).toEqual([["weakened-tests", "passed"], ["base-tests", "passed"], ["yaml-loads", "passed"]]);
    expect(result.environment.sandboxed).toBe(true);
    expect(result.environment.pythonEnv).toEqual({ lockHash: expect.stringMatching(/^[0-9a-f]{64}$/), python: "3.11.2", interpreter: "/usr/bin/python3.11" });
    expect(logs[0]).toMatch(new RegExp(`^compiling a lock from the merge base ${r.base.slice(0, 12)}: 1 requirements of requirements\\.txt, 1 pins of the task`));

    const again = await run(repo({ "requirements.txt": "pyyaml==6.0.2\n" }, { "calc/ops.py": "def add(a, b):\n    return a + b  # same\n" }));
    expect(again.result.verdict).toBe("resolved");
    expect(again.result.environment.pythonEnv?.lockHash).toBe(result.environment.pythonEnv?.lockHash);
    expect(again.logs).toEqual([]);
    expect(store.uvCalls().filter((c) => c.startsWith("pip compile"))).toHaveLength(1);
  }, 300_000);

  it("follows the base, not the head: a dependency the head adds is noted, not installed", async () => {
    const r = repo({ "requirements.txt": "pyyaml==6.0.2\n" }, { "requirements.txt": "pyyaml==6.0.2\nsix==1.16.0\n", "calc/ops.py": "def add(a, b):\n    return a + b  # touched\n" });
    const { result, logs } = await run(r);
    expect(result.verdict).toBe("resolved");
    expect(logs).toContain("the head declares requirements its merge base does not, not installed (the environment follows the merge base): six==1.16.0 (requirements.txt)");
  }, 300_000);

  it("a base without the declared file ends in error (phase environment) naming the file and the field; nothing runs", async () => {
    const { result } = await run(repo({ "requirements-dev.txt": "pyyaml==6.0.2\n" }, { "calc/ops.py": "def add(a, b):\n    return a + b  # touched\n" }));
    expect(result.verdict).toBe("error");
    expect(result.error?.phase).toBe("environment");
    expect(result.error?.message).toMatch(/^requirements\.txt is not in the merge base [0-9a-f]{12} \(environment\.fromTree\.requirements in .*calc-gate\/task\.yml\)/);
    expect(result.official).toBeNull();
    expect(result.probes).toEqual([]);
  }, 120_000);
});
