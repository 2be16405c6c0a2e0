import { describe, expect, it } from "vitest";
import { renderSummary } from "../../src/core/check-run-render.js";
import { renderTimeline } from "../../src/core/job-timeline.js";
import type { JobRecord } from "../../src/core/result.js";
import { sampleResult } from "../helpers.js";

const rec = (id: string, startS: number, endS: number, o: Partial<JobRecord> = {}): JobRecord => ({ id, kind: "probe", gpus: [], cores: [], port: 29600, timing: false, exclusive: false, startS, endS, waitedS: 0, ...o });

describe("the jobs timeline in the summary", () => {
  it("draws each job's slice and a bar over the evaluation's time", () => {
    const rows = renderTimeline([rec("official", 0, 4, { kind: "official", gpus: [0, 1], cores: [0, 1, 2, 3] }), rec("probe_time", 4, 8, { gpus: [0, 1], timing: true, port: 29602 }), rec("probe_api", 4, 6, { gpus: [2, 3], port: 29601 })], 8);
    expect(rows.slice(4, 7)).toEqual([
      "| `official` | 0-1 | 0-3 | 29600 | `████····` | 0.0–4.0 |",
      "| `probe_api` | 2-3 | shared | 29601 | `····██··` | 4.0–6.0 |",
      "| `probe_time` (timing) | 0-1 | shared | 29602 | `····████` | 4.0–8.0 |",
    ]);
  });

  it("is part of the summary when the result records jobs, and absent otherwise", () => {
    expect(renderSummary(sampleResult({ jobs: [rec("official", 0, 1, { kind: "official" })] }))).toContain("#### Jobs on the runner");
    expect(renderSummary(sampleResult())).not.toContain("Jobs on the runner");
  });
});
