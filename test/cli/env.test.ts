import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TINY_TASK } from "../helpers.js";
import { isolatedStore, lockText, makeEnvTask, makeWheels, REAL_UV } from "../engine/environment/tiny-env.js";
import { cli } from "./run-cli.js";

describe.skipIf(!REAL_UV)(`probegate env${REAL_UV ? "" : " (skipped: uv is not installed; python3 -m pip install uv==0.13.8)"}`, () => {
  const wheels = makeWheels();
  const store = isolatedStore();

  it("env build builds each task's environment, then reuses it; a task without one is listed as such; env list shows what is built", async () => {
    const dir = makeEnvTask(lockText(wheels.dir, [wheels.tinypkg, wheels.torch]));
    const first = await cli("env", "build", dir, TINY_TASK);
    expect(first.code).toBe(0);
    expect(first.err).toMatch(/▸ tiny-env: environment .*requirements\.lock\n  · building environment [0-9a-f]{16}-py3\.11\.2 from /);
    expect(first.err).toMatch(/  ✓ built /);
    const lines = first.out.trim().split("\n");
    expect(lines[1]).toMatch(/^│ task\s+│ lock hash\s+│ python\s+│ torch\s+│ status\s+│ seconds\s+│ size on disk\s+│$/);
    expect(lines[3]).toMatch(/^│ tiny-env\s+│ [0-9a-f]{16}\s+│ 3\.11\.2\s+│ 2\.15\.0\s+│ built\s+│ \d+\.\d\s+│ \d/);
    expect(lines[5]).toMatch(/^│ tiny-sum\s+│ -\s+│ -\s+│ -\s+│ none declared\s+│ -\s+│ -\s+│$/);

    const again = await cli("env", "build", "--json", dir);
    expect(again.code).toBe(0);
    const rows = JSON.parse(again.out) as Array<Record<string, unknown>>;
    expect(rows).toEqual([expect.objectContaining({ task: "tiny-env", status: "reused", python: "3.11.2", torch: "2.15.0", interpreter: "/usr/bin/python3.11", error: null })]);
    expect(store.uvCalls().filter((c) => c.startsWith("pip sync"))).toHaveLength(1);

    const list = await cli("env", "list");
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/│ folder\s+│ lock\s+│ python\s+│ torch\s+│ packages\s+│ built\s+│ build s\s+│ size on disk\s+│\n.*\n│ [0-9a-f]{16}-py3\.11\.2\s+│ .*requirements\.lock\s+│ 3\.11\.2\s+│ 2\.15\.0\s+│ 2\s/);
  });

  it("env build exits 3 naming the lock line of a package that cannot be installed", async () => {
    const dir = makeEnvTask(lockText(wheels.dir, [{ ...wheels.tinypkg, version: "7.0" }]));
    const r = await cli("env", "build", dir);
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/✗ the environment lock .*requirements\.lock:5 \(tinypkg==7\.0\) could not be installed/);
    expect(r.out).toMatch(/^│ tiny-env\s+│ -\s+│ -\s+│ -\s+│ failed/m);
  });

  it("a task folder whose lock is missing is bad input (exit 2) naming the field", async () => {
    const dir = makeEnvTask("");
    rmSync(join(dir, "environment", "requirements.lock"));
    const r = await cli("env", "build", dir);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/task\.yml:\d+: environment\.lock: file .*requirements\.lock does not exist\./);
  });
});

describe("a lock that is not one", () => {
  it("is bad input when the task loads (validate, env build, eval), naming the file and line", async () => {
    const dir = makeEnvTask("--no-index\ntinypkg>=1.0\n");
    const r = await cli("env", "build", dir);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^probegate: not a lock the engine can build \(environment\.lock in .*task\.yml\): .*requirements\.lock:2: tinypkg is not pinned to one version \(write tinypkg==<version>; `uv pip compile` does\); .*requirements\.lock:2: tinypkg has no --hash/);
  });
});
