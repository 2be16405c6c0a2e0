import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify, parse } from "yaml";
import { evaluate } from "../../src/engine/evaluate.js";
import { loadTask } from "../../src/engine/task-load.js";
import { KIT, TINY_SUBS, TINY_TASK, tmp } from "../helpers.js";

/** tiny-sum with declared params and requirements, and one probe that reports what it was handed. */
function paramTask(): string {
  const dir = join(tmp(), "tiny-params");
  cpSync(TINY_TASK, dir, { recursive: true });
  const spec = parse(readFileSync(join(TINY_TASK, "task.yml"), "utf8"));
  spec.id = "tiny-params";
  spec.probes.path = "probes";
  spec.params = { n: { int: [3, 3000] }, mode: { choice: ["a", "b", "c"] } };
  spec.requirements = [{ id: "total-any-length", text: "total() sums a list of any length" }];
  writeFileSync(join(dir, "task.yml"), stringify(spec));
  mkdirSync(join(dir, "probes"));
  writeFileSync(
    join(dir, "probes", "probe_sizes.py"),
    [
      "# PROBEGATE-CANARY-PARAMS-77e1",
      "from probegate_probe import check, param, seed",
      "from sumlib import total",
      "n = param('n')",
      "with check('total-drawn-length', 'functional', requirements=['total-any-length']) as c:",
      "    c.measured.update({'n': n, 'mode': param('mode'), 'seed': seed()})",
      "    assert total(list(range(n))) == n * (n - 1) // 2",
      "",
    ].join("\n"),
  );
  return dir;
}

describe("probe parameters drawn per evaluation", () => {
  const task = loadTask(paramTask());
  const reference = { kind: "patch" as const, path: join(TINY_SUBS, "reference.patch") };

  it("hands the probes values drawn from the seed, records both, and --seed reproduces them", async () => {
    const a = await evaluate({ task, submission: reference, kitDir: KIT, unsandboxed: true, seed: 12345 });
    const b = await evaluate({ task, submission: reference, kitDir: KIT, unsandboxed: true, seed: 12345 });
    const c = await evaluate({ task, submission: reference, kitDir: KIT, unsandboxed: true, seed: 54321 });
    expect(a.verdict).toBe("resolved");
    expect(a.params?.seed).toBe(12345);
    const seen = (r: typeof a) => r.probes.find((p) => p.id === "total-drawn-length")?.measured;
    expect(seen(a)).toEqual({ n: a.params?.values.n, mode: a.params?.values.mode, seed: 12345 });
    expect(b.params).toEqual(a.params);
    expect(c.params?.values).not.toEqual(a.params?.values);
    expect(a.probes.find((p) => p.id === "total-drawn-length")?.requirements).toEqual(["total-any-length"]);
  });

  it("draws a fresh seed when none is given", async () => {
    const r1 = await evaluate({ task, submission: reference, kitDir: KIT, unsandboxed: true });
    const r2 = await evaluate({ task, submission: reference, kitDir: KIT, unsandboxed: true });
    expect(r1.params?.seed).not.toBe(r2.params?.seed);
  });
});
