import nock from "nock";
import { describe, expect, it } from "vitest";
import { getEvaluation } from "../../src/store/evaluations.js";
import { assertValidBody } from "../github/openapi.js";
import {
  API,
  deliver,
  EVALUATOR_REPO,
  HEAD,
  keyFor,
  loadApp,
  mockCheckRunCreate,
  mockStart,
  mockTaskYml,
  OWNER,
  PR_NUMBER,
  pullRequestPayload,
  REPO,
  TASK,
  useAppTests,
} from "./app-harness.js";

useAppTests();

/** A `paths:` route to the harness's task (an assignment unless its task.yml says otherwise), and the evaluator. */
const PATHS_CONFIG = `routes:
  - task: ${TASK}
    paths: ["megatron/core/optimizer/**"]
evaluator:
  repository: ${EVALUATOR_REPO}
  workflow: evaluate.yml
  ref: main
`;
const ASSIGNMENT_YML = `id: ${TASK}\ntitle: Shard the optimizer\narea: training\nbase: { path: base }\ngpus: 2\n`;

function mockFiles(...filenames: string[]): void {
  nock(API).get(`/repos/${OWNER}/${REPO}/pulls/${PR_NUMBER}/files`).query({ per_page: "100" }).reply(200, filenames.map((filename) => ({ filename, status: "modified" })));
}

describe("a paths route that names an assignment task", () => {
  it("gets a neutral `probegate / config` check run saying so (body valid per GitHub's OpenAPI), and the evaluation still runs", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 301, runId: 8301, config: PATHS_CONFIG });
    mockFiles("megatron/core/optimizer/distrib_optimizer.py");
    mockTaskYml(TASK, ASSIGNMENT_YML);
    mockCheckRunCreate({ name: "probegate / config", createId: 302 });
    const completed: any[] = [];
    nock(API)
      .patch(`/repos/${OWNER}/${REPO}/check-runs/302`, (b) => assertValidBody("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}", b) && completed.push(b) > 0)
      .reply(200, { id: 302 });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    expect(getEvaluation(app.db, keyFor())).toMatchObject({ state: "dispatched", workflowRunId: 8301 });
    expect(completed[0]).toMatchObject({ status: "completed", conclusion: "neutral", output: { title: `A paths route names an assignment task: ${TASK}` } });
    expect(completed[0].output.summary).toContain(`${EVALUATOR_REPO}/tasks/${TASK}/task.yml`);
    expect(completed[0].output.summary).toContain("Route these paths to a repository gate (`base: { pr: true }`");
  });

  it("says it once per head: a redelivered event finds the config check run and posts nothing more", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 303, runId: 8303, config: PATHS_CONFIG });
    mockFiles("megatron/core/optimizer/distrib_optimizer.py");
    mockTaskYml(TASK, ASSIGNMENT_YML);
    mockCheckRunCreate({ name: "probegate / config", existing: [{ id: 304, external_id: `config:${HEAD}`, status: "completed" }] });
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    expect(getEvaluation(app.db, keyFor())?.state).toBe("dispatched");
  });

  it("warns nothing for a repository gate, nor when the task's task.yml cannot be read (advisory only)", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 305, runId: 8305, config: PATHS_CONFIG });
    mockFiles("megatron/core/optimizer/distrib_optimizer.py");
    mockTaskYml(TASK, ASSIGNMENT_YML.replace("base: { path: base }", "base: { pr: true }"));
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    expect(getEvaluation(app.db, keyFor())?.state).toBe("dispatched");

    const other = await loadApp();
    mockStart({ checkRunId: 306, runId: 8306, config: PATHS_CONFIG });
    mockFiles("megatron/core/optimizer/distrib_optimizer.py");
    mockTaskYml(TASK, null);
    await deliver(other, "pull_request", pullRequestPayload("opened"));
    expect(getEvaluation(other.db, keyFor())?.state).toBe("dispatched");
  });

  it("reads no task.yml when the PR reached the task by a label, though its route also has paths", async () => {
    const app = await loadApp();
    mockStart({ checkRunId: 307, runId: 8307, config: PATHS_CONFIG.replace(`paths: ["megatron/core/optimizer/**"]`, `paths: ["megatron/core/optimizer/**"]\n    labels: [bug]`) });
    mockFiles("README.md");
    await deliver(app, "pull_request", pullRequestPayload("opened"));
    expect(getEvaluation(app.db, keyFor())?.state).toBe("dispatched");
  });
});
