import { cpSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import nock from "nock";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { evaluateForAction } from "../../src/action/evaluate-for-action.js";
import { readSettings } from "../../src/action/settings.js";
import { evaluationKey } from "../../src/core/evaluation-key.js";
import { getEvaluation } from "../../src/store/evaluations.js";
import { ROOT, tmp } from "../helpers.js";
import { checkoutOf, gateTaskDir, prRepository, SYNC_TWICE } from "../action/gate-fixture.js";
import {
  API,
  deliver,
  EVALUATOR_REPO,
  loadApp,
  mockArtifact,
  mockCheckRunCreate,
  mockCheckRunUpdate,
  mockConfig,
  mockDispatch,
  mockProbeSet,
  mockTaskYml,
  mockToken,
  OWNER,
  PROBE_SET,
  pullRequestPayload,
  REPO,
  resultZip,
  SIGNING_KEY,
  useAppTests,
  workflowRunPayload,
} from "./app-harness.js";

useAppTests();

const TASK = "calc-gate";
const GATE_CONFIG = `routes:
  - task: ${TASK}
    paths: ["calc/**", "!**/*.md"]
evaluator:
  repository: ${EVALUATOR_REPO}
  workflow: evaluate.yml
  ref: main
feedback:
  agentDetail: full
`;

/** The `with:` of the probegate step of examples/workflows/probegate-evaluator.yml, its `${{ … }}` filled in as the runner would. */
function evaluatorStepInputs(inputs: Record<string, string>, secrets: Record<string, string>): Record<string, string> {
  const wf = parse(readFileSync(join(ROOT, "examples", "workflows", "probegate-evaluator.yml"), "utf8"));
  const steps = wf.jobs.evaluate.steps as Array<{ id?: string; uses?: string; with?: Record<string, unknown> }>;
  const checkout = steps.find((s) => s.with?.path === "submission");
  // The checkout the engine needs for a gate: the whole history, so the base and the history to it are there.
  expect(checkout?.with?.["fetch-depth"]).toBe(0);
  expect(Object.keys(wf.on.workflow_dispatch.inputs).sort()).toEqual(Object.keys(inputs).concat(["runner"]).sort());
  const step = steps.find((s) => s.id === "probegate");
  const fill = (v: unknown) =>
    String(v).replace(/\$\{\{\s*(inputs|secrets)\.([\w-]+)\s*\}\}/g, (_, scope: string, name: string) => {
      const value = (scope === "inputs" ? inputs : secrets)[name];
      if (value === undefined) throw new Error(`the workflow uses ${scope}.${name}, which this run does not have`);
      return value;
    });
  return Object.fromEntries(Object.entries(step?.with ?? {}).map(([k, v]) => [k, fill(v)]));
}

describe("a repository gate end to end: agent PR → app dispatch with the base SHA → Action on the runner → check run with numbers", () => {
  it("reports '+1 all_reduce call per step' with both sides' figures on the PR's check run", async () => {
    // The watched repository: a base on main, an agent's PR that all-reduces twice per step.
    const pr = prRepository({ "calc/sync.py": SYNC_TWICE });
    const payload = pullRequestPayload("opened");
    payload.pull_request.head.sha = pr.head;
    payload.pull_request.base.sha = pr.base;
    const number = payload.pull_request.number as number;
    const key = evaluationKey({ owner: OWNER, repo: REPO, headSha: pr.head, task: TASK, probeSet: PROBE_SET });

    // 1. The app: the paths route names the gate; the dispatch (body checked against GitHub's OpenAPI) carries the base.
    const app = await loadApp();
    mockToken();
    mockConfig(GATE_CONFIG);
    nock(API).get(`/repos/${OWNER}/${REPO}/pulls/${number}/files`).query({ per_page: "100" }).reply(200, [{ filename: "calc/sync.py", status: "modified" }]);
    mockProbeSet();
    const created = mockCheckRunCreate({ sha: pr.head, name: `probegate / ${TASK}`, createId: 501 });
    const dispatched = mockDispatch(9501);
    const task = gateTaskDir();
    // The app reads the path-routed task's task.yml: a repository gate, so no `probegate / config` warning.
    mockTaskYml(TASK, readFileSync(join(task, "task.yml"), "utf8"));
    await deliver(app, "pull_request", payload);
    expect(created[0]).toMatchObject({ name: `probegate / ${TASK}`, head_sha: pr.head, external_id: key, status: "queued" });
    expect(dispatched[0].inputs).toEqual({ repository: `${OWNER}/${REPO}`, sha: pr.head, "base-sha": pr.base, task: TASK, "evaluation-key": key });
    expect(getEvaluation(app.db, key)).toMatchObject({ state: "dispatched", baseSha: pr.base, workflowRunId: 9501 });

    // 2. The evaluator run: the example workflow's checkouts and its probegate step, with the dispatch's inputs.
    const runner = tmp("pg-runner-");
    mkdirSync(join(runner, "evaluator", "tasks"), { recursive: true });
    cpSync(task, join(runner, "evaluator", "tasks", TASK), { recursive: true, filter: (p) => !p.includes("/probes") });
    cpSync(join(task, "probes"), join(runner, "probes", TASK), { recursive: true });
    cpSync(checkoutOf(pr.dir, dispatched[0].inputs.sha), join(runner, "submission"), { recursive: true });
    const withInputs = evaluatorStepInputs(dispatched[0].inputs, { PROBEGATE_SIGNING_KEY: SIGNING_KEY });
    expect(withInputs).toMatchObject({ mode: "runner", "base-sha": pr.base, submission: "submission" });
    const paths = new Set(["task", "probes", "submission"]);
    const given: Record<string, string> = { "check-name": "probegate", gpus: "all", "remove-probes": "false", unsandboxed: "", "fail-on": "never" };
    for (const [k, v] of Object.entries(withInputs)) given[k] = paths.has(k) ? join(runner, v) : v;
    const settings = readSettings((name) => given[name] ?? "");
    const log: string[] = [];
    const outcome = await evaluateForAction(settings, {
      env: { RUNNER_TEMP: runner, GITHUB_SHA: "e".repeat(40) },
      info: (t) => log.push(t),
      warning: (t) => log.push(t),
      group: (_name, fn) => fn(),
      checkRunCreated: () => undefined,
    });
    expect(log.join("\n")).toContain(`repository gate ${TASK}: ${join(runner, "submission")}@${pr.head} against base ${pr.base.slice(0, 12)} (input 'base-sha')`);
    const { result } = outcome;
    expect(result.submission).toMatchObject({ sha: pr.head, prBase: { asked: pr.base, mergeBase: pr.base } });
    expect(result.environment.sandboxed).toBe(true);
    const traffic = result.probes.find((p) => p.id === "sync-traffic");
    expect(traffic, JSON.stringify(result.probes)).toMatchObject({ category: "traffic", status: "failed", measured: { base_all_reduce_calls: 1, head_all_reduce_calls: 2 } });
    expect(result.verdict).toBe("probe-rejected");

    // 3. The run completes: the app takes the signed result from its artifact and completes the check run.
    // (the installation's token is cached from the first event)
    mockArtifact(9501, resultZip(readFileSync(outcome.resultPath, "utf8")));
    const completed = mockCheckRunUpdate(501);
    await deliver(app, "workflow_run", workflowRunPayload(9501));
    expect(getEvaluation(app.db, key)).toMatchObject({ state: "completed", verdict: "probe-rejected" });
    expect(completed[0]).toMatchObject({ status: "completed", conclusion: "failure" });
    const annotation = completed[0].output.annotations.find((a: { title: string }) => a.title.includes("sync-traffic"));
    expect(annotation).toMatchObject({ path: "calc/sync.py", start_line: 4, annotation_level: "failure", title: "traffic probe failed: sync-traffic" });
    // The numbers, both sides: 1024 float32 all-reduced once per step at the base, twice at the head.
    expect(annotation.message).toBe("head's collectives differ from base's per step: +1 all_reduce call per step (1 → 2), bytes 4,096 → 8,192 (+4,096 B), new in head at calc/sync.py:6 in sync (1 call in all)");
  }, 240_000);
});
