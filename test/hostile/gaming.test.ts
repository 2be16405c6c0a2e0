import { readdirSync, readFileSync } from "node:fs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { detectSandbox } from "../../src/engine/sandbox/sandbox.js";
import { GOOD_AVERAGE, expectCaught, gaming, normlib, type Caught } from "./gaming-helpers.js";
import { DETECTORS, FORGED, INTEGRITY, LAZY, MEMOISES, OUTLIVES_PROBE, OUTSIDE_ALLOCATOR, PATCH_KIT, PROBE_SHAPED, READS_PARAMS, REWRAPS_DIST, SLOWER, THREADED, WRITES_RESULTS, hidesWhenProbed } from "./gaming-cases.js";
import { strayCgroups } from "./hostile-helpers.js";

/**
 * Submissions that game the probes (SECURITY.md, the gaming list; issue 29): each behaves well only
 * while it believes it is probed, or bends what the probe measures, and would otherwise be rejected
 * by the gaming-norm task's probes (too slow, too much memory, a second all_reduce, wrong values).
 * Each is evaluated through the CLI in the sandbox; the assertion names the check that must catch it
 * and what its message must say. A verdict of `resolved` is never acceptable.
 */

const CASE_TIMEOUT = 240_000;

beforeAll(async () => {
  expect(await detectSandbox(), "the gaming suite needs the sandbox (bubblewrap)").toMatchObject({ ok: true });
  process.env.PROBEGATE_SIGNING_KEY = "hostile-suite-signing-key-7d2f0c9e";
});

/** The processes above `pid`, nearest first (ppid is the field after the parenthesised name in /proc/<pid>/stat). */
function ancestors(pid: number): number[] {
  const out: number[] = [];
  for (let p = pid; p > 1 && out.length < 64; ) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      p = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      out.push(p);
    } catch {
      break;
    }
  }
  return out;
}

function isVitest(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("vitest");
  } catch {
    return false;
  }
}

/** Whether the nearest vitest process above `pid` is a worker other than this one (the meters suite evaluates the same task beside this file). */
function anotherWorkers(pid: number): boolean {
  const nearest = ancestors(pid).find((p) => p === process.pid || isVitest(p));
  return nearest !== undefined && nearest !== process.pid;
}

afterEach(() => {
  const strays: string[] = [];
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      // A process of this task left behind: ours still under this worker, or an orphan under no worker at all;
      // never an evaluation another test file is running right now.
      if (readFileSync(`/proc/${pid}/environ`, "utf8").includes("probegate-gaming-norm-") && !anotherWorkers(Number(pid))) strays.push(pid);
    } catch {
      // Gone, or a kernel thread.
    }
  }
  expect(strays).toEqual([]);
  expect(strayCgroups()).toEqual([]);
});

describe("gaming: the control", () => {
  it("the reference solution is resolved under every defence", async () => {
    const o = await gaming("reference", { "normlib/__init__.py": normlib([]) }, { allowResolved: true });
    expect(o.result.verdict, JSON.stringify(o.result.probes.map((p) => [p.id, p.status, p.message]))).toBe("resolved");
  }, CASE_TIMEOUT);
});

describe("gaming: detecting the probe phase", () => {
  it.each(DETECTORS)("%s: hides its flaws only while probed", async (name, detector, caught) => {
    const o = await gaming(name, { "normlib/__init__.py": hidesWhenProbed(detector) });
    expect(o.result.official?.passed).toBe(true);
    expectCaught(o.result, caught);
  }, CASE_TIMEOUT);
});

describe("gaming: bending what the probe measures", () => {
  it.each([
    ["gaming-memoises-repeated-calls", normlib(MEMOISES, []), SLOWER],
    ["gaming-lazy-result-computed-on-first-use", normlib(LAZY, []), SLOWER],
    ["gaming-background-thread-finishes-after-the-timer", normlib(THREADED, []), SLOWER],
    ["gaming-rewraps-torch-distributed", normlib(REWRAPS_DIST), { id: /^average-traffic$/, status: "error", message: /not seen by the counter/ } as Caught],
    ["gaming-memory-outside-the-allocator", normlib(OUTSIDE_ALLOCATOR, []), { id: /^normalize-memory$/, status: "failed", message: /touched/ } as Caught],
    ["gaming-reads-drawn-params", normlib(READS_PARAMS, []), INTEGRITY(/environ/)],
    ["gaming-probe-shaped-inputs", normlib(PROBE_SHAPED, []), SLOWER],
    ["gaming-patches-kit-helpers", normlib(PATCH_KIT, []), INTEGRITY(/probe kit/)],
    ["gaming-process-outlives-the-probe", normlib(OUTLIVES_PROBE, []), FORGED],
    ["gaming-writes-the-results-file", normlib(WRITES_RESULTS, [], GOOD_AVERAGE), FORGED],
  ] as const)("%s", async (name, source, caught) => {
    const o = await gaming(name, { "normlib/__init__.py": source });
    expect(o.result.official?.passed, o.result.official?.reason ?? "").toBe(true);
    expectCaught(o.result, caught as Caught);
  }, CASE_TIMEOUT);
});
