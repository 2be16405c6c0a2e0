import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { evaluateForAction, UntrustedWorkflowError } from "../../src/action/evaluate-for-action.js";
import { readSettings } from "../../src/action/settings.js";
import { checkTrustedWorkflow, parseWorkflowRef } from "../../src/action/trusted-workflow.js";
import { stepFails } from "../../src/core/gate.js";
import { webhookExample } from "../github/webhook-examples.js";
import { tmp } from "../helpers.js";

const CENTRAL = "octo-org/ci-policies/.github/workflows/probegate.yml@refs/heads/main";
const WORKFLOW_SHA = "1111111111111111111111111111111111111111";
const MERGE_SHA = "2222222222222222222222222222222222222222";
const HEAD_SHA = "3333333333333333333333333333333333333333";

describe("checkTrustedWorkflow", () => {
  const central = { workflowRef: CENTRAL, workflowSha: WORKFLOW_SHA, sha: MERGE_SHA, prHeadSha: HEAD_SHA };
  it("accepts the central workflow at its ref, by full ref, bare branch name or pinned commit", () => {
    expect(checkTrustedWorkflow(CENTRAL, central)).toEqual({ ok: true });
    expect(checkTrustedWorkflow("Octo-Org/ci-policies/.github/workflows/probegate.yml@main", central)).toEqual({ ok: true });
    expect(checkTrustedWorkflow(`octo-org/ci-policies/.github/workflows/probegate.yml@${WORKFLOW_SHA}`, central)).toEqual({ ok: true });
  });

  it("refuses the PR's own copy of the workflow (edited by the agent), naming both", () => {
    const fromPr = { workflowRef: "Codertocat/Hello-World/.github/workflows/probegate.yml@refs/pull/2/merge", workflowSha: MERGE_SHA, sha: MERGE_SHA, prHeadSha: HEAD_SHA };
    const r = checkTrustedWorkflow(CENTRAL, fromPr);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.why).toContain("the workflow file came from the pull request");
    expect(r.why).toContain("Codertocat/Hello-World/.github/workflows/probegate.yml@refs/pull/2/merge");
    expect(r.why).toContain(`trusted-workflow is ${CENTRAL}`);
  });

  it("refuses another file, another branch, another pinned commit, and a workflow read from the PR head even under the trusted name", () => {
    expect(checkTrustedWorkflow(CENTRAL, { ...central, workflowRef: CENTRAL.replace("probegate.yml", "other.yml") }).ok).toBe(false);
    expect(checkTrustedWorkflow(CENTRAL, { ...central, workflowRef: CENTRAL.replace("refs/heads/main", "refs/heads/agent-branch") }).ok).toBe(false);
    expect(checkTrustedWorkflow(`octo-org/ci-policies/.github/workflows/probegate.yml@${"4".repeat(40)}`, central).ok).toBe(false);
    expect(checkTrustedWorkflow(CENTRAL, { ...central, workflowSha: HEAD_SHA }).ok).toBe(false);
    expect(checkTrustedWorkflow(CENTRAL, { ...central, workflowRef: undefined })).toMatchObject({ ok: false, why: expect.stringContaining("GITHUB_WORKFLOW_REF is not set") });
  });

  it("parses owner/repo/.github/workflows/file.yml@ref and nothing else", () => {
    expect(parseWorkflowRef(CENTRAL)).toEqual({ repo: "octo-org/ci-policies", path: ".github/workflows/probegate.yml", ref: "refs/heads/main" });
    expect(parseWorkflowRef("octo-org/ci-policies@main")).toBeNull();
  });
});

describe("the Action in standalone mode", () => {
  const inputs = (over: Record<string, string> = {}): Record<string, string> => ({
    mode: "standalone",
    task: "/nonexistent/task",
    probes: "",
    "fail-on": "probe-rejected",
    "check-name": "probegate",
    gpus: "all",
    "remove-probes": "true",
    "github-token": "ghs_test",
    unsandboxed: "",
    "world-size": "",
    ...over,
  });

  it("requires trusted-workflow", () => {
    expect(() => readSettings((n) => inputs()[n] ?? "")).toThrow(/Input 'trusted-workflow' is required in standalone mode/);
  });

  it("refuses to run from the PR's workflow before it reads the probes or the task (nothing loaded, no GitHub call)", async () => {
    const event = join(tmp(), "event.json");
    const payload = webhookExample("pull_request", (p) => p.action === "opened" && p.installation);
    writeFileSync(event, JSON.stringify(payload));
    const probes = join(tmp(), "probes");
    mkdirSync(probes);
    const s = readSettings((n) => inputs({ "trusted-workflow": CENTRAL, probes })[n] ?? "");
    const env = {
      GITHUB_EVENT_NAME: "pull_request",
      GITHUB_EVENT_PATH: event,
      GITHUB_WORKFLOW_REF: `${payload.repository.full_name}/.github/workflows/probegate.yml@refs/pull/${payload.number}/merge`,
      GITHUB_WORKFLOW_SHA: MERGE_SHA,
      GITHUB_SHA: MERGE_SHA,
    };
    const host = { env, info: () => {}, warning: () => {}, group: <T>(_n: string, fn: () => Promise<T>) => fn(), checkRunCreated: () => {} };
    // The task folder does not exist: reaching it would fail differently. No nock: a GitHub call would fail too.
    await expect(evaluateForAction(s, host)).rejects.toThrow(UntrustedWorkflowError);
    await expect(evaluateForAction(s, host)).rejects.toThrow(/came from the pull request: this step runs in .*@refs\/pull\/.*, but trusted-workflow is octo-org\/ci-policies/);
  });
});

describe("fail-on and the error verdict", () => {
  it("fails the step on `error` unless the user opts out with an -only form or never", () => {
    expect(stepFails("error", "probe-rejected")).toBe(true);
    expect(stepFails("error", "official-failed")).toBe(true);
    expect(stepFails("error", "any")).toBe(true);
    expect(stepFails("error", "probe-rejected-only")).toBe(false);
    expect(stepFails("error", "official-failed-only")).toBe(false);
    expect(stepFails("error", "never")).toBe(false);
    expect(stepFails("probe-rejected", "official-failed")).toBe(false);
    expect(stepFails("probe-rejected", "probe-rejected-only")).toBe(true);
    expect(stepFails("resolved", "probe-rejected")).toBe(false);
  });
});
