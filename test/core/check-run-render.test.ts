import { describe, expect, it } from "vitest";
import { batchAnnotations, conclusionFor, renderAnnotations, renderCheckRun, renderSummary, renderTitle, SUMMARY_LIMIT } from "../../src/core/check-run-render.js";
import type { ProbeResult } from "../../src/core/result.js";
import { EvaluationResultSchema } from "../../src/core/result.js";
import { sampleResult } from "../helpers.js";

function manyFailures(n: number, messageLength = 100): ProbeResult[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `check-${i}`,
    category: "traffic" as const,
    status: "failed" as const,
    message: `x${i} `.padEnd(messageLength, "y"),
    location: { path: `pkg/mod${i % 7}.py`, line: i + 1 },
    measured: null,
    probe: "probe_traffic",
    attempts: 1,
    durationS: 0.1,
  }));
}

describe("check-run rendering", () => {
  it("maps verdicts to conclusions", () => {
    expect(conclusionFor("resolved")).toBe("success");
    expect(conclusionFor("probe-rejected")).toBe("failure");
    expect(conclusionFor("official-failed")).toBe("failure");
    expect(conclusionFor("error")).toBe("neutral");
  });

  it("titles each verdict", () => {
    expect(renderTitle(sampleResult())).toBe("Passes official tests, fails 1 of 2 hidden probes");
    const failed = sampleResult({ verdict: "official-failed", official: { ...sampleResult().official!, passed: false, counts: { total: 12, passed: 10, failed: 1, errors: 1, skipped: 0 } } });
    expect(renderTitle(failed)).toBe("Fails 2 of 12 official tests");
    expect(renderTitle(sampleResult({ verdict: "error", error: { phase: "probes", message: "runner lost" } }))).toBe("Evaluation error: runner lost");
    const limited = sampleResult({ verdict: "official-failed", official: { ...sampleResult().official!, passed: false, limit: "memory" } });
    expect(renderTitle(limited)).toBe("Official tests stopped: memory limit exceeded");
  });

  it("renders a summary with the probe table and escapes table cells", () => {
    const s = renderSummary(sampleResult());
    expect(s).toContain("🚩 Rejected by hidden probes");
    expect(s).toContain("| memory | 0 | 1 | 0 | 0 |");
    expect(s).toContain("| structure | 1 | 0 | 0 | 0 |");
    expect(s).toContain("64.0 MiB \\| expected");
    expect(s).toContain("`dpopt/optim.py:42`");
  });

  it("shows the memory of record, host and GPU, only where it was measured", () => {
    const base = sampleResult();
    const off = { ...base.official!, peakMemoryBytes: 300 * 2 ** 20, memorySource: "cgroup" as const };
    const gpu = { source: "nvidia-smi" as const, gpus: [0, 1], official: { baselineBytes: 0, peakBytes: 1277 * 2 ** 20, samples: 9 }, probes: null };
    expect(renderSummary(sampleResult({ official: off, gpuMemory: gpu }))).toContain(
      "| Memory of record | host 300.0 MiB in official tests (cgroup peak) · GPU 1.2 GiB in official tests (nvidia-smi, GPU 0,1) |",
    );
    expect(renderSummary(sampleResult({ official: { ...off, memorySource: "sampled" }, gpuMemory: null }))).toContain("| Memory of record | host 300.0 MiB in official tests (sampled RSS) |");
    expect(renderSummary(sampleResult({ official: { ...off, peakMemoryBytes: null }, gpuMemory: null }))).not.toContain("Memory of record");
  });

  it("annotates failed probes at their location and skips passed ones", () => {
    const a = renderAnnotations(sampleResult());
    expect(a).toEqual([
      {
        path: "dpopt/optim.py",
        start_line: 42,
        end_line: 42,
        annotation_level: "failure",
        title: "memory probe failed: state-sharded",
        message: "optimizer state per rank is 64.0 MiB | expected ≤ 34 MiB",
      },
    ]);
  });

  it("batches more than 50 annotations into requests of at most 50", () => {
    const result = sampleResult({ probes: manyFailures(123) });
    const batches = batchAnnotations(renderCheckRun(result).annotations);
    expect(batches.map((b) => b.length)).toEqual([50, 50, 23]);
    expect(batches.flat().map((a) => a.title)).toEqual(result.probes.map((p) => `traffic probe failed: ${p.id}`));
    expect(() => batchAnnotations([1], 0)).toThrow(RangeError);
  });

  it("keeps a huge summary under GitHub's 65,535 characters with a note", () => {
    const result = sampleResult({ probes: manyFailures(2000, 250) });
    const s = renderSummary(result);
    expect(s.length).toBeLessThanOrEqual(SUMMARY_LIMIT);
    expect(s).toMatch(/✂️ \d+ more rows left out/);
    expect(s).toContain("check-0");
    expect(s).not.toContain("check-1999 ");
    // The head (verdict and facts) survives truncation.
    expect(s.startsWith("### 🚩")).toBe(true);
  });

  it("renders official failures and judge resets as annotations", () => {
    const base = sampleResult();
    const result = EvaluationResultSchema.parse({
      ...base,
      verdict: "official-failed",
      official: { ...base.official, passed: false, failing: [{ name: "test_x", classname: "tests.test_a", file: "tests/test_a.py", line: 9, kind: "failure", message: "assert 1 == 2" }] },
      workspaceResets: [{ path: "tests/conftest.py", action: "removed", why: "conftest.py is a test-time hook" }],
      probes: [],
    });
    const a = renderAnnotations(result);
    expect(a.map((x) => [x.path, x.annotation_level])).toEqual([
      ["tests/test_a.py", "failure"],
      ["tests/conftest.py", "notice"],
    ]);
    expect(renderSummary(result)).toContain("Changes to the judge that were undone");
  });
});
