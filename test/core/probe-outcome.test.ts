import { describe, expect, it } from "vitest";
import { categoryFromName, checksFromRun, failedTimeChecks, mergeRuns, needsAnotherRun, type ProbeCheck } from "../../src/core/probe-outcome.js";

const run = (resultsText: string, over: Partial<Parameters<typeof checksFromRun>[0]> = {}) =>
  checksFromRun({ probe: "probe_memory", resultsText, exitCode: 0, signal: null, limit: null, durationS: 1, ...over });
const line = (o: object) => JSON.stringify(o);

describe("checksFromRun", () => {
  it("reads valid lines", () => {
    const checks = run(`${line({ id: "a", category: "memory", status: "passed" })}\n${line({ id: "b", category: "state", status: "failed", message: "m", location: { path: "x.py", line: 3 } })}\n`);
    expect(checks.map((c) => [c.id, c.status, c.probe])).toEqual([
      ["a", "passed", "probe_memory"],
      ["b", "failed", "probe_memory"],
    ]);
  });

  it("turns protocol violations into errors naming the line", () => {
    const checks = run(`not json\n${line({ id: "Bad Id", category: "memory", status: "passed" })}\n${line({ id: "c", category: "speed", status: "passed" })}`);
    expect(checks.map((c) => c.status)).toEqual(["error", "error", "error"]);
    expect(checks[0]?.message).toMatch(/results line 1 .*not JSON/);
    expect(checks[1]?.message).toMatch(/line 2 .*id/);
    expect(checks[2]?.message).toMatch(/line 3 .*category/);
  });

  it("refuses a check reported twice (e.g. a forged second 'passed'), saying what the first said", () => {
    const checks = run(`${line({ id: "a", category: "memory", status: "failed", message: "held 9 MiB" })}\n${line({ id: "a", category: "memory", status: "passed" })}`);
    expect(checks).toHaveLength(1);
    expect(checks[0]).toMatchObject({ status: "error", message: "check 'a' was reported more than once (2 lines; the first failed: held 9 MiB); its results cannot be trusted" });
  });

  it("keeps a failure that several processes reported (each rank's integrity check), with its first message", () => {
    const act = (l: number) => line({ id: "p.rank0.integrity", category: "functional", status: "failed", message: `submission code read /proc/1/cmdline (a.py:${l}) while it was being probed`, location: { path: "a.py", line: l } });
    const checks = run([act(3), act(3), act(9)].join("\n"));
    expect(checks).toHaveLength(1);
    expect(checks[0]).toMatchObject({ status: "failed", message: "submission code read /proc/1/cmdline (a.py:3) while it was being probed (reported 3 times)", location: { path: "a.py", line: 3 } });
    const mixed = run([act(3), line({ id: "p.rank0.integrity", category: "functional", status: "passed" }), act(4)].join("\n"));
    expect(mixed[0]).toMatchObject({ status: "error", message: expect.stringContaining("(3 lines; the first failed: submission code read /proc/1/cmdline (a.py:3)") });
  });

  it("rejects locations outside the submission", () => {
    expect(run(line({ id: "a", category: "state", status: "failed", location: { path: "../../etc/passwd" } }))[0]?.status).toBe("error");
    expect(run(line({ id: "a", category: "state", status: "failed", location: { path: "/etc/passwd" } }))[0]?.status).toBe("error");
  });

  it("makes silence and crashes errors, and limits failures", () => {
    expect(run("")).toMatchObject([{ id: "probe-memory.silent", status: "error", category: "memory" }]);
    expect(run("", { exitCode: 1 })).toMatchObject([{ id: "probe-memory.exit", status: "error" }]);
    const partial = run(line({ id: "a", category: "memory", status: "passed" }), { exitCode: null, signal: "SIGSEGV" });
    expect(partial.map((c) => c.status)).toEqual(["passed", "error"]);
    expect(partial[1]?.message).toContain("killed by SIGSEGV after 1 checks");
    expect(run("", { limit: "wall-clock", exitCode: null, signal: "SIGKILL" })).toMatchObject([{ id: "probe-memory.limit", status: "failed" }]);
  });

  it("files a run stopped by a memory limit under memory, whichever probe it was", () => {
    for (const limit of ["memory", "gpu-memory"]) {
      expect(run("", { probe: "probe_time", limit, exitCode: null, signal: "SIGKILL" })).toMatchObject([
        { id: "probe-time.limit", category: "memory", status: "failed", message: `the probe run was stopped by the ${limit} limit while running the submission` },
      ]);
    }
    expect(run("", { probe: "probe_time", limit: "wall-clock", exitCode: null, signal: "SIGKILL" })).toMatchObject([{ category: "time" }]);
  });

  it("names categories from probe file names", () => {
    expect(categoryFromName("probe_traffic")).toBe("traffic");
    expect(categoryFromName("probe_state_resume")).toBe("state");
    expect(categoryFromName("probe_misc")).toBe("functional");
  });
});

const t = (status: ProbeCheck["status"], id = "speed"): ProbeCheck => ({ id, category: "time", status, message: status, probe: "probe_time", attempts: 1, durationS: 1 });

describe("time re-measurement: fail only when two of three fail", () => {
  it.each([
    [["failed", "failed"], "failed", false],
    [["failed", "passed"], undefined, true],
    [["failed", "passed", "failed"], "failed", false],
    [["failed", "passed", "passed"], "passed", false],
    // A run that could not measure (the kit's RunnerBusy: the runner's CPUs were oversubscribed)
    // counts for neither side; no two alike after three runs is inconclusive, an error.
    [["error"], undefined, true],
    [["error", "passed"], undefined, true],
    [["error", "passed", "passed"], "passed", false],
    [["error", "failed", "failed"], "failed", false],
    [["failed", "error", "failed"], "failed", false],
    [["failed", "error", "passed"], "error", false],
    [["error", "error", "error"], "error", false],
  ] as const)("%j", (statuses, final, more) => {
    const runs = statuses.map((s) => [t(s)]);
    expect(needsAnotherRun(runs, ["speed"])).toBe(more);
    if (final) {
      const merged = mergeRuns(runs);
      expect(merged[0]?.status).toBe(final);
      expect(merged[0]?.attempts).toBe(statuses.length);
    }
  });

  it("says why an inconclusive time check is an error, with the first unmeasured run's message", () => {
    const busy = { ...t("error"), message: "runner busy: the runner's CPUs were oversubscribed while timing" };
    const merged = mergeRuns([[t("failed")], [busy], [t("passed")]]);
    expect(merged[0]).toMatchObject({ status: "error", attempts: 3, durationS: 3 });
    expect(merged[0]?.message).toBe("inconclusive over 3 runs: 1 passed, 1 failed, 1 could not measure (runner busy: the runner's CPUs were oversubscribed while timing)");
  });

  it("re-measures time checks that failed or could not be measured, not other checks", () => {
    const state: ProbeCheck = { ...t("error", "resume"), category: "state" };
    expect(failedTimeChecks([t("failed", "a"), t("error", "b"), t("passed", "c"), state])).toEqual(["a", "b"]);
  });

  it("counts a time check missing from a re-run as failed", () => {
    expect(mergeRuns([[t("failed")], []])[0]?.status).toBe("failed");
  });

  it("leaves non-time checks as in the first run", () => {
    const state: ProbeCheck = { ...t("passed", "resume"), category: "state" };
    const merged = mergeRuns([[t("failed"), state], [t("failed"), { ...state, status: "failed" }]]);
    expect(merged[1]?.status).toBe("passed");
  });
});
