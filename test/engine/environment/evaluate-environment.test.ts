import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EvaluationResultSchema, type EvaluationResult } from "../../../src/core/result.js";
import { evaluate, type EvaluateOptions, type EvaluationEvent } from "../../../src/engine/evaluate.js";
import { loadTask } from "../../../src/engine/task-load.js";
import { KIT } from "../../helpers.js";
import { BASE_PYTHON, isolatedStore, lockText, makeEnvTask, makeWheels, REAL_UV } from "./tiny-env.js";

async function run(taskDir: string, over: Partial<EvaluateOptions> = {}): Promise<{ result: EvaluationResult; events: EvaluationEvent[] }> {
  const events: EvaluationEvent[] = [];
  const task = loadTask(taskDir);
  const result = await evaluate({ task, submission: { kind: "folder", path: join(taskDir, "base") }, kitDir: KIT, gpus: [], onEvent: (e) => events.push(e), ...over });
  expect(EvaluationResultSchema.parse(result)).toEqual(result);
  return { result, events };
}

const sha = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

describe.skipIf(!REAL_UV)(`evaluations in a task's environment${REAL_UV ? "" : " (skipped: uv is not installed; python3 -m pip install uv==0.13.8)"}`, () => {
  const wheels = makeWheels();
  const store = isolatedStore();
  const syncs = () => store.uvCalls().filter((c) => c.startsWith("pip sync")).length;

  it("runs {python} from the environment (sandboxed), records its lock hash; a second evaluation reuses the build", async () => {
    const dir = makeEnvTask(lockText(wheels.dir, [wheels.tinypkg]));
    const lockFile = join(dir, "environment", "requirements.lock");
    const { result, events } = await run(dir);
    expect(result.verdict).toBe("resolved");
    expect(result.probes.map((p) => [p.id, p.status])).toEqual([["env-value", "passed"]]);
    expect(result.environment.pythonEnv).toEqual({ lockHash: sha(lockFile), python: "3.11.2", interpreter: BASE_PYTHON });
    expect(result.environment.python).toBe("3.11.2");
    expect(result.environment.sandboxed).toBe(true);
    // The build's phase lines reach the progress printer.
    expect(events.some((e) => e.type === "log" && e.source === "environment" && /^building environment /.test(e.text))).toBe(true);
    expect(syncs()).toBe(1);

    const second = await run(dir);
    expect(second.result.verdict).toBe("resolved");
    expect(second.result.environment.pythonEnv?.lockHash).toBe(sha(lockFile));
    expect(second.events.some((e) => e.type === "log" && e.source === "environment")).toBe(false);
    expect(syncs()).toBe(1);
  });

  it("without the environment (--python the runner's), the same task fails its official test: the environment is what made it pass", async () => {
    const dir = makeEnvTask(lockText(wheels.dir, [wheels.tinypkg]));
    const { result, events } = await run(dir, { python: BASE_PYTHON });
    expect(result.verdict).toBe("official-failed");
    expect(result.environment.pythonEnv ?? null).toBeNull();
    // Said, not silent: an explicit --python wins over the task's environment.
    expect(events).toContainEqual({ type: "log", source: "environment", text: "not used: --python names the interpreter (/usr/bin/python3.11), not the task's environment/requirements.lock" });
  });

  it("a lock that cannot be installed ends in verdict error naming the package and the line, and runs nothing", async () => {
    const dir = makeEnvTask(lockText(wheels.dir, [wheels.tinypkg, { ...wheels.torch, sha256: "f".repeat(64) }]));
    const { result } = await run(dir);
    expect(result.verdict).toBe("error");
    expect(result.error?.phase).toBe("environment");
    expect(result.error?.message).toMatch(/requirements\.lock:8 \(torch==2\.15\.0\) could not be installed: error: Failed to download `torch==2\.15\.0` cause: Hash mismatch/);
    expect(result.official).toBeNull();
    expect(result.probes).toEqual([]);
  });

  it("requires: is checked against the environment's torch, not the runner's", async () => {
    const lock = lockText(wheels.dir, [wheels.tinypkg, wheels.torch]);
    // The environment has (a stand-in for) torch 2.15.0; Debian's Python has 1.13.
    const met = await run(makeEnvTask(lock, "requires:\n  torch: \">=2.4\"\n"));
    expect(met.result.verdict).toBe("resolved");
    expect(met.result.environment.torch).toBe("2.15.0");
    const unmet = await run(makeEnvTask(lock, "requires:\n  torch: \">=3\"\n"));
    expect(unmet.result.verdict).toBe("error");
    expect(unmet.result.error?.phase).toBe("requires");
    expect(unmet.result.error?.message).toMatch(/torch >=3 \(the task's environment \(environment\/requirements\.lock, .+-py3\.11\.2\) has torch 2\.15\.0\)/);
  });
});
