import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EvaluationResultSchema } from "../../src/core/result.js";
import { TINY_SUBS, TINY_TASK } from "../helpers.js";
import { cli } from "./run-cli.js";

const sub = (name: string) => join(TINY_SUBS, `${name}.patch`);

describe("probegate eval over several submissions on one runner", () => {
  it("evaluates them side by side, prefixes each progress line, and exits with the worst code", async () => {
    const r = await cli("eval", "--task", TINY_TASK, "--submission", sub("reference"), "--submission", sub("mutates-input"), "--jobs", "2", "--cores", "2", "--format", "json");
    expect(r.code).toBe(1);
    const results = (JSON.parse(r.out) as unknown[]).map((x) => EvaluationResultSchema.parse(x));
    expect(results.map((x) => x.verdict)).toEqual(["resolved", "probe-rejected"]);
    // Every progress line belongs to one submission.
    const lines = r.err.trim().split("\n").slice(1);
    expect(lines.every((l) => l.startsWith("[reference] ") || l.startsWith("[mutates-input] "))).toBe(true);
    // Each job is recorded on its slice: its own port, cores of the budget, start before end.
    for (const x of results) {
      expect(x.jobs?.map((j) => j.id).sort()).toEqual(["official", "probe_state", "probe_time"]);
      for (const j of x.jobs ?? []) {
        expect(j.endS).toBeGreaterThan(j.startS);
        expect(j.port).not.toBe(29500);
        expect(j.cores.every((c) => c < 2)).toBe(true);
      }
    }
    const ports = results.flatMap((x) => (x.jobs ?? []).map((j) => j.port));
    expect(new Set(ports).size).toBe(ports.length);
  });

  it("with --jobs 1 runs one job at a time", async () => {
    const r = await cli("eval", "--task", TINY_TASK, "--submission", sub("reference"), "--jobs", "1", "--format", "json");
    const jobs = [...(EvaluationResultSchema.parse(JSON.parse(r.out)).jobs ?? [])].sort((a, b) => a.startS - b.startS);
    for (let i = 1; i < jobs.length; i += 1) expect(jobs[i]!.startS).toBeGreaterThanOrEqual(jobs[i - 1]!.endS);
  });

  it("refuses a bad budget with the flag named (exit 2)", async () => {
    expect((await cli("eval", "--task", TINY_TASK, "--submission", sub("reference"), "--jobs", "0")).err).toContain("--jobs: expected a whole number ≥ 1, got '0'");
    const cores = await cli("eval", "--task", TINY_TASK, "--submission", sub("reference"), "--cores", "999");
    expect(cores.code).toBe(2);
    expect(cores.err).toContain("--cores: expected 1 to");
    const gpus = await cli("eval", "--task", TINY_TASK, "--submission", sub("reference"), "--gpus", "7");
    expect(gpus.code).toBe(2);
    expect(gpus.err).toContain("--gpus: GPU 7 is not on this runner");
  });
});
