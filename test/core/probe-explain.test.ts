import { describe, expect, it } from "vitest";
import { CONFIG_CHECK_NAME, checkRunName, configErrorOutput, noResultOutput, RERUN_ACTION, supersededOutput, timedOutOutput } from "../../src/core/app-check-outputs.js";
import { CATEGORIES } from "../../src/core/probe-check.js";
import { CATEGORY_PURPOSE, renderExplain } from "../../src/core/probe-explain.js";

const SHA = "abcdef0123456789abcdef0123456789abcdef01";

describe("renderExplain", () => {
  it("says when nothing was evaluated, or the result is not in yet", () => {
    expect(renderExplain([])).toContain("has not evaluated this pull request's current head");
    expect(renderExplain([{ task: "t", headSha: SHA, state: "running", verdict: null, failures: [] }])).toBe("**t** at `abcdef0`: no result yet (the evaluation is running).");
  });

  it("lists failures by category in the fixed category order, with what each category checks", () => {
    const text = renderExplain([
      {
        task: "sharded-optimizer",
        headSha: SHA,
        state: "completed",
        verdict: "probe-rejected",
        failures: [
          { probeId: "ring-bytes", category: "traffic", status: "failed", message: "moved 2.0x the expected bytes" },
          { probeId: "state-sharded", category: "memory", status: "failed", message: "64 MiB\nper rank" },
          { probeId: "resume", category: "state", status: "error", message: "" },
        ],
      },
    ]);
    const lines = text.split("\n");
    expect(lines[0]).toBe("**sharded-optimizer** at `abcdef0`: probe-rejected. Hidden probes that did not pass, by category:");
    expect(lines.filter((l) => l.startsWith("- **")).map((l) => /\*\*(\w+)\*\*/.exec(l)?.[1])).toEqual(["state", "memory", "traffic"]);
    expect(text).toContain(`- **memory** (1) — checks ${CATEGORY_PURPOSE.memory}.`);
    expect(text).toContain("  - `state-sharded` failed: 64 MiB per rank");
    expect(text).toContain("  - `resume` error\n");
  });

  it("shortens long messages and has a purpose for every category", () => {
    const text = renderExplain([{ task: "t", headSha: SHA, state: "completed", verdict: "probe-rejected", failures: [{ probeId: "p", category: "time", status: "failed", message: "x".repeat(1000) }] }]);
    expect(text).toContain(`${"x".repeat(299)}…`);
    expect(text).not.toContain("x".repeat(300));
    for (const c of CATEGORIES) expect(CATEGORY_PURPOSE[c].length).toBeGreaterThan(20);
  });
});

describe("app check-run outputs", () => {
  it("keeps the rerun button within GitHub's limits (label 20, description 40, identifier 20)", () => {
    expect(RERUN_ACTION.label.length).toBeLessThanOrEqual(20);
    expect(RERUN_ACTION.description.length).toBeLessThanOrEqual(40);
    expect(RERUN_ACTION.identifier.length).toBeLessThanOrEqual(20);
  });

  it("names check runs per task and gives the non-result endings their conclusions", () => {
    expect(checkRunName("paged-kv-cache")).toBe("probegate / paged-kv-cache");
    expect(CONFIG_CHECK_NAME).toBe("probegate / config");
    expect(supersededOutput(SHA)).toMatchObject({ conclusion: "cancelled", title: "Superseded by abcdef0", annotations: [] });
    expect(timedOutOutput("no result 60 s after the attempt began")).toMatchObject({ conclusion: "timed_out" });
    const rejected = noResultOutput("Result rejected", ["the result is not signed"]);
    expect(rejected.conclusion).toBe("neutral");
    expect(rejected.summary).toContain("- the result is not signed");
  });

  it("puts each config problem in the summary and on its line", () => {
    const out = configErrorOutput(".github/probegate.yml", "main", [
      { field: "routes.0.task", line: 3, message: "lower-case letters, digits, '.', '_' and '-'" },
      { field: "(document)", line: null, message: "bad" },
    ]);
    expect(out).toMatchObject({ conclusion: "failure", title: ".github/probegate.yml is invalid (2 problems)" });
    expect(out.summary).toContain("- `.github/probegate.yml:3` — `routes.0.task`: lower-case");
    expect(out.summary).toContain("- `.github/probegate.yml` — `(document)`: bad");
    expect(out.annotations.map((a) => [a.start_line, a.annotation_level])).toEqual([
      [3, "failure"],
      [1, "failure"],
    ]);
  });
});
