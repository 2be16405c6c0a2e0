import { describe, expect, it } from "vitest";
import { probeFailures } from "../../src/store/dispatch-context.js";
import { getEvaluation } from "../../src/store/evaluations.js";
import { recordKnownGoodOutcomes } from "../../src/store/probe-health.js";
import type { StoreDb } from "../../src/store/db.js";
import { sampleResult } from "../helpers.js";
import { deliver, FULL_DETAIL_YAML, keyFor, loadApp, mockArtifact, mockCheckRunUpdate, mockStart, pullRequestPayload, resultZip, signedResult, T0, TASK, useAppTests, workflowRunPayload, type LoadedApp } from "./app-harness.js";

useAppTests();

const CHECK = 61;
const RUN = 8101;
/** The probe set sampleResult() says it was judged by. */
const JUDGED_BY = sampleResult().task.probeSet;

/** `state-sharded` (the check sampleResult() fails) failed `failures` of 20 known-good reference runs. */
function knownGood(db: StoreDb, probeSet: string, failures: number): void {
  for (let i = 0; i < 20; i++) {
    recordKnownGoodOutcomes(db, { task: TASK, probeSet, submission: `reference.patch run ${i + 1}/20`, source: "validate --power", at: T0 }, [
      { id: "state-sharded", probe: "probe_memory", status: i < failures ? "failed" : "passed" },
      { id: "interfaces", probe: "probe_structure", status: "passed" },
    ]);
  }
}

async function finish(app: LoadedApp): Promise<any> {
  mockStart({ checkRunId: CHECK, runId: RUN, config: FULL_DETAIL_YAML });
  await deliver(app, "pull_request", pullRequestPayload("opened"));
  mockArtifact(RUN, resultZip(signedResult()));
  const updates = mockCheckRunUpdate(CHECK);
  await deliver(app, "workflow_run", workflowRunPayload(RUN));
  return updates[0];
}

describe("quarantined checks in the app's check run", () => {
  it("reports a quarantined check's failure as a warning: success, warning annotation, summary saying why, verdict kept as read", async () => {
    const app = await loadApp();
    knownGood(app.db, JUDGED_BY, 2);
    const update = await finish(app);
    expect(update).toMatchObject({ status: "completed", conclusion: "success", output: { title: "Passes official tests and hidden probes (1 quarantined check failed)" } });
    expect(update.output.annotations).toEqual([expect.objectContaining({ path: "dpopt/optim.py", start_line: 42, annotation_level: "warning", title: "quarantined memory probe failed: state-sharded" })]);
    expect(update.output.summary).toContain("| `state-sharded` | memory | failed | 2 of last 20 |");
    expect(update.output.summary).toContain("the signed result says probe-rejected");
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "completed", verdict: "resolved" });
    // The scorecard agrees with the check run: a warning is no probe-failure category of the attempt.
    expect(probeFailures(app.db, keyFor(), getEvaluation(app.db, keyFor())?.attempt ?? 0)).toEqual([]);
  });

  it("still rejects when the check failed known-good code only once in 20, or was quarantined under another probe set", async () => {
    const app = await loadApp();
    knownGood(app.db, JUDGED_BY, 1);
    knownGood(app.db, `sha256:${"c".repeat(64)}`, 5);
    const update = await finish(app);
    expect(update).toMatchObject({ conclusion: "failure", output: { title: "Passes official tests, fails 1 of 2 hidden probes" } });
    expect(update.output.annotations).toEqual([expect.objectContaining({ annotation_level: "failure" })]);
    expect(update.output.summary).not.toContain("quarantined");
    expect(getEvaluation(app.db, keyFor())?.verdict).toBe("probe-rejected");
    expect(probeFailures(app.db, keyFor(), getEvaluation(app.db, keyFor())?.attempt ?? 0)).toEqual([
      { probeId: "state-sharded", category: "memory", status: "failed", message: expect.any(String) },
    ]);
  });
});
