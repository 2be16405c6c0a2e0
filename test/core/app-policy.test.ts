import { describe, expect, it } from "vitest";
import { AppConfigSchema, routeTasks } from "../../src/core/app-config.js";
import { decideBudget, deferredOutput } from "../../src/core/app-policy/evaluation-budget.js";
import { decideMergeGroup, mergeQueuePr } from "../../src/core/app-policy/merge-group.js";
import { chooseRunner } from "../../src/core/app-policy/runner-route.js";
import { judgeSandbox } from "../../src/core/app-policy/sandbox-policy.js";
import { renderCheckRun } from "../../src/core/check-run-render.js";
import { keyId, signResult, verifyResultWithKeys } from "../../src/core/result-signature.js";
import { sampleResult } from "../helpers.js";

const at = (min: number) => new Date(Date.UTC(2026, 11, 4, 10, min));

describe("chooseRunner", () => {
  const runners = { "1": "arc-gpu-1", "2": "arc-gpu-2", "8": "arc-gpu-8" };
  it("picks the smallest runner with enough GPUs", () => {
    expect(chooseRunner(0, runners)).toEqual({ ok: true, label: "arc-gpu-1", gpus: 1 });
    expect(chooseRunner(2, runners)).toEqual({ ok: true, label: "arc-gpu-2", gpus: 2 });
    expect(chooseRunner(3, runners)).toEqual({ ok: true, label: "arc-gpu-8", gpus: 8 });
  });
  it("refuses a task larger than every runner, naming the largest", () => {
    expect(chooseRunner(9, runners)).toEqual({ ok: false, why: expect.stringContaining("the largest runner in `runners:` of .github/probegate.yml has 8 (arc-gpu-8)") });
  });
});

describe("decideBudget", () => {
  it("allows up to the limit in a rolling hour, then says when the window frees up", () => {
    expect(decideBudget([at(0)], at(10), 2)).toEqual({ allowed: true });
    expect(decideBudget([at(0), at(5)], at(10), 2)).toEqual({ allowed: false, nextAt: at(60), used: 2 });
    expect(decideBudget([at(0), at(5), at(8)], at(10), 2)).toEqual({ allowed: false, nextAt: at(65), used: 3 });
    expect(decideBudget([at(0), at(5)], at(61), 2)).toEqual({ allowed: true });
  });
  it("words the waiting check run with the time and the limit", () => {
    const out = deferredOutput({ nextAt: at(60), used: 2, limit: 2 });
    expect(out.title).toBe("Waiting: next evaluation at 2026-12-04T11:00:00Z");
    expect(out.summary).toContain("`budget.perPrPerHour`");
  });
});

describe("judgeSandbox", () => {
  const base = sampleResult();
  it("passes sandboxed results, refuses unsandboxed ones, and banners them where the repository allows it", () => {
    expect(judgeSandbox({ ...base, environment: { ...base.environment, sandboxed: true } }, null)).toEqual({ kind: "sandboxed" });
    expect(judgeSandbox(base, null)).toMatchObject({ kind: "refused" });
    expect(judgeSandbox(base, "lab runners, our own agents")).toMatchObject({ kind: "allowed", banner: expect.stringContaining('"lab runners, our own agents"') });
  });
});

describe("decideMergeGroup", () => {
  const gate = { pr: 7, headSha: "h".repeat(40), tree: "t1" };
  it("passes when every group commit holds a passed gate's tree, else names the unmatched commits", () => {
    expect(decideMergeGroup([{ sha: "c1", tree: "t1" }], [gate])).toEqual({ kind: "pass", matched: [{ commit: "c1", gate }] });
    expect(decideMergeGroup([{ sha: "c1", tree: "t1" }, { sha: "c2", tree: "t2" }], [gate])).toEqual({ kind: "evaluate", unmatched: ["c2"] });
    expect(decideMergeGroup([], [gate])).toEqual({ kind: "evaluate", unmatched: [] });
  });
  it("reads the PR number from the queue's branch", () => {
    expect(mergeQueuePr("refs/heads/gh-readonly-queue/main/pr-104-929f8209d40f77f4abc622a499c93a83babdbe64")).toBe(104);
    expect(mergeQueuePr("refs/heads/main")).toBeNull();
  });
});

describe("probe detail", () => {
  it("categories: the category counts, no probe id, message or location", () => {
    const out = renderCheckRun(sampleResult(), "categories");
    expect(out.summary).toContain("| memory | 0 | 1 | 0 | 0 |");
    expect(JSON.stringify(out)).not.toMatch(/state-sharded|64\.0 MiB|dpopt\/optim\.py/);
    expect(out.annotations).toEqual([]);
    expect(renderCheckRun(sampleResult(), "full").annotations).toHaveLength(1);
  });
});

describe("verifyResultWithKeys", () => {
  const current = "the-current-key-0123456789";
  const previous = "the-previous-key-0123456789";
  it("verifies by the key the signature names, current or previous, and refuses another", () => {
    expect(verifyResultWithKeys(signResult(sampleResult(), current), [current, previous])).toEqual({ ok: true, keyIndex: 0 });
    expect(verifyResultWithKeys(signResult(sampleResult(), previous), [current, previous])).toEqual({ ok: true, keyIndex: 1 });
    const other = verifyResultWithKeys(signResult(sampleResult(), "some-other-key-0123456789"), [current, previous]);
    expect(other).toEqual({ ok: false, why: expect.stringContaining(`expected ${keyId(current)} or ${keyId(previous)}`) });
    const tampered = { ...signResult(sampleResult(), previous), verdict: "resolved" as const };
    expect(verifyResultWithKeys(tampered, [current, previous])).toEqual({ ok: false, why: "the signature does not match the result's content" });
  });
});

describe("deployment fields of .github/probegate.yml", () => {
  it("defaults: 4 heads an hour, categories only, no unsandboxed results, no runner map", () => {
    const c = AppConfigSchema.parse({});
    expect(c.budget).toEqual({ perPrPerHour: 4 });
    expect(c.feedback).toEqual({ agentDetail: "categories" });
    expect(c.allowUnsandboxed).toBeUndefined();
    expect(c.runners).toBeUndefined();
  });
  it("reads runners keyed by GPU count, a route's gpus, and refuses a reasonless opt-in", () => {
    const c = AppConfigSchema.parse({ runners: { 1: "arc-gpu-1", 8: "arc-gpu-8" }, routes: [{ task: "t", labels: ["x"], gpus: 4 }] });
    expect(c.runners).toEqual({ "1": "arc-gpu-1", "8": "arc-gpu-8" });
    expect(routeTasks({ labels: ["x"], body: null, changedPaths: [] }, c).targets[0]).toMatchObject({ id: "t", gpus: 4 });
    expect(AppConfigSchema.safeParse({ allowUnsandboxed: { reason: "ok" } }).success).toBe(false);
    expect(AppConfigSchema.safeParse({ runners: { two: "arc-gpu-2" } }).success).toBe(false);
    expect(AppConfigSchema.safeParse({ budget: { perPrPerHour: 0 } }).success).toBe(false);
  });
});
