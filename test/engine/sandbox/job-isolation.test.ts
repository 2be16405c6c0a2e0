import { chmodSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HarnessError } from "../../../src/engine/errors.js";
import { planIsolation } from "../../../src/engine/sandbox/job-isolation.js";
import { SANDBOX_UID } from "../../../src/engine/sandbox/sandbox.js";
import { tmp } from "../../helpers.js";

const base = { bwrap: "bwrap", cgroups: null, processes: 64, diskBytes: 1 << 26 };
const ok = { ok: true as const, dropToUid: SANDBOX_UID };

/** An evaluation folder inside an open parent, as mkdtemp makes it (0700). */
function evaluationRoot(parentMode = 0o755): string {
  const parent = tmp("pg-iso-");
  chmodSync(parent, parentMode);
  const root = join(parent, "eval");
  mkdirSync(root, { mode: 0o700 });
  return root;
}

describe("planIsolation", () => {
  it("plans no sandbox when the operator chose --unsandboxed", () => {
    const plan = planIsolation({ ...base, support: null, interpreterDirs: [], evaluationRoot: evaluationRoot() })([0]);
    expect(plan).toEqual({ cgroups: null, processes: 64, diskBytes: 1 << 26, sandbox: null });
  });

  it("opens the evaluation folder to the sandbox user and binds interpreter folders outside the system ones", () => {
    const root = evaluationRoot();
    const venv = join(root, "..", "venv");
    mkdirSync(venv, { mode: 0o755 });
    const plan = planIsolation({ ...base, support: ok, interpreterDirs: ["/usr/lib/python3/dist-packages", venv], evaluationRoot: root })([]);
    expect(statSync(root).mode & 0o777).toBe(0o711);
    expect(plan.sandbox?.readOnly).toContain(venv);
    expect(plan.sandbox?.readOnly).not.toContain("/usr/lib/python3/dist-packages");
    expect(plan.sandbox).toMatchObject({ dropToUid: SANDBOX_UID, devices: [] });
  });

  it("drops to the evaluation's own uid where the engine drops privileges, and to none where it does not", () => {
    const own = planIsolation({ ...base, support: ok, interpreterDirs: [], evaluationRoot: evaluationRoot(), uid: 1_000_000_007 });
    // Every job of the evaluation runs as that one uid (they share its workspace). A job with GPUs
    // needs their device nodes, which this machine lacks: gpu-devices.test.ts.
    expect(own([]).sandbox?.dropToUid).toBe(1_000_000_007);
    const caller = planIsolation({ ...base, support: { ok: true, dropToUid: null }, interpreterDirs: [], evaluationRoot: evaluationRoot(), uid: 1_000_000_007 });
    expect(caller([]).sandbox?.dropToUid).toBeNull();
  });

  it("names the folder that keeps the sandbox user out of the evaluation folder", () => {
    const root = evaluationRoot(0o700);
    expect(() => planIsolation({ ...base, support: ok, interpreterDirs: [], evaluationRoot: root })).toThrow(HarnessError);
    expect(() => planIsolation({ ...base, support: ok, interpreterDirs: [], evaluationRoot: root })).toThrow(`${join(root, "..")} is not searchable by others`);
  });

  it("names the folder that keeps the sandbox user out of the interpreter's folders", () => {
    const root = evaluationRoot();
    const closed = join(root, "..", "private");
    mkdirSync(join(closed, "venv"), { recursive: true, mode: 0o700 });
    chmodSync(join(closed, "venv"), 0o755);
    expect(() => planIsolation({ ...base, support: ok, interpreterDirs: [join(closed, "venv")], evaluationRoot: root })).toThrow(/cannot reach the interpreter's folder .*private\/venv: .*private is not searchable by others/);
    // Not root (no user to drop to): the caller's own permissions hold, nothing to check.
    expect(() => planIsolation({ ...base, support: { ok: true, dropToUid: null }, interpreterDirs: [join(closed, "venv")], evaluationRoot: root })).not.toThrow();
  });
});
