import { describe, expect, it } from "vitest";
import { drawParams, ProbeParamsSchema } from "../../src/core/probe-params.js";
import { TaskSpecSchema } from "../../src/core/task-spec.js";
import { ProbeLineSchema } from "../../src/core/probe-check.js";

const params = ProbeParamsSchema.parse({ hidden: { int: [8, 64] }, lr: { float: [0.001, 0.1] }, dtype: { choice: ["float32", "float64"] } });

describe("drawParams", () => {
  it("gives the same values for the same seed, on every call", () => {
    expect(drawParams(params, 42)).toEqual(drawParams(params, 42));
    expect(drawParams(params, 42).seed).toBe(42);
  });

  it("gives other values for other seeds, and spans each range", () => {
    const draws = Array.from({ length: 400 }, (_, s) => drawParams(params, s).values);
    const hidden = new Set(draws.map((v) => v.hidden));
    expect(hidden.size).toBeGreaterThan(40);
    expect(Math.min(...(draws.map((v) => v.hidden) as number[]))).toBe(8);
    expect(Math.max(...(draws.map((v) => v.hidden) as number[]))).toBe(64);
    expect(new Set(draws.map((v) => v.dtype))).toEqual(new Set(["float32", "float64"]));
    for (const v of draws) expect(v.lr as number).toBeGreaterThanOrEqual(0.001), expect(v.lr as number).toBeLessThan(0.1);
    expect(drawParams(params, 1).values).not.toEqual(drawParams(params, 2).values);
  });

  it("keeps a parameter's value when an unrelated one is added after it in name order", () => {
    const more = ProbeParamsSchema.parse({ ...params, zeta: { int: [0, 3] } });
    const a = drawParams(params, 7).values;
    const b = drawParams(more, 7).values;
    expect({ dtype: b.dtype, hidden: b.hidden, lr: b.lr }).toEqual(a);
  });

  it("refuses empty or inverted ranges, naming the parameter", () => {
    const r = ProbeParamsSchema.safeParse({ hidden: { int: [9, 8] }, x: { choice: [] } });
    expect(r.success).toBe(false);
    const paths = r.error?.issues.map((i) => i.path.join(".")) ?? [];
    expect(paths).toContain("hidden.int");
    expect(paths).toContain("x.choice");
  });
});

describe("requirements in task.yml and in probe lines", () => {
  const base = { id: "t", title: "T", area: "training", base: { path: "base" }, official: { command: ["x"] }, probes: { path: "p" } };

  it("accepts requirement ids and refuses one listed twice", () => {
    expect(TaskSpecSchema.parse({ ...base, requirements: [{ id: "resume-exact", text: "..." }] }).requirements).toHaveLength(1);
    const r = TaskSpecSchema.safeParse({ ...base, requirements: [{ id: "a", text: "x" }, { id: "a", text: "y" }] });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(["requirements", 1, "id"]);
  });

  it("a probe line may name the requirements it covers, as ids", () => {
    expect(ProbeLineSchema.parse({ id: "c", category: "state", status: "passed", requirements: ["resume-exact"] }).requirements).toEqual(["resume-exact"]);
    expect(ProbeLineSchema.safeParse({ id: "c", category: "state", status: "passed", requirements: ["Not An Id"] }).success).toBe(false);
  });
});
