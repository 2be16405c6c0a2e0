import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AppConfigSchema, bodyMarkers, routeTasks, type AppConfigInput } from "../../src/core/app-config.js";
import { jsonSchemas } from "../../src/cli/schema-command.js";
import { InputError } from "../../src/engine/errors.js";
import { parseWith, readYaml } from "../../src/engine/yaml-file.js";
import { ROOT, tmp } from "../helpers.js";

function load(yaml: string) {
  const file = join(tmp(), "probegate.yml");
  writeFileSync(file, yaml);
  return parseWith(readYaml(file, "probegate config"), AppConfigSchema, "probegate config");
}

function errorOf(fn: () => unknown): InputError {
  try {
    fn();
  } catch (e) {
    if (e instanceof InputError) return e;
    throw e;
  }
  throw new Error("expected an InputError");
}

const GOOD = `enabled: true
agents:
  authors:
    acme-coder[bot]: acme
  labels:
    agent:codex: codex
routes:
  - task: sharded-optimizer
    labels: [probegate:sharded-optimizer]
    paths: ["dpopt/**"]
    marker: true
  - suite: traffic-basics
    paths: ["**/*.cu"]
evaluator:
  repository: acme/probegate-evaluator
  workflow: evaluate.yml
reruns:
  perPrPerHour: 2
`;

describe("AppConfigSchema through readYaml/parseWith", () => {
  it("loads a full config and fills defaults", () => {
    const c = load(GOOD);
    expect(c.agents).toEqual({ defaults: true, authors: { "acme-coder[bot]": "acme" }, coAuthors: {}, branchPrefixes: {}, labels: { "agent:codex": "codex" } });
    expect(c.routes[1]).toEqual({ suite: "traffic-basics", labels: [], paths: ["**/*.cu"], marker: false });
    expect(c.evaluator).toEqual({ repository: "acme/probegate-evaluator", workflow: "evaluate.yml", ref: "main", timeoutMinutes: 120, tasksPath: "tasks" });
    expect(c.reruns).toEqual({ perPrPerHour: 2, allowAgent: false });
  });

  it("accepts the example config in examples/probegate.yml, routing as its comments say", () => {
    const c = parseWith(readYaml(join(ROOT, "examples", "probegate.yml"), "probegate config"), AppConfigSchema, "probegate config");
    expect(c).toMatchObject({ gate: true, evaluator: { repository: "acme/probegate-evaluator", timeoutMinutes: 90 } });
    // Real upstream paths reach repository gates only; an assignment task only by label or marker.
    const routed = routeTasks({ labels: [], body: "Fixes the sync.\nprobegate-task: weight-sync", changedPaths: ["megatron/core/distributed/param_and_grad_buffer.py", "verl/utils/torch_functional.py", "docs/x.md"] }, c);
    expect(routed.targets.map((t) => t.id)).toEqual(["megatron-ddp-gate", "verl-core-algos-gate", "weight-sync"]);
    const optimizer = routeTasks({ labels: ["probegate:sharded-optimizer"], body: null, changedPaths: ["megatron/core/optimizer/distrib_optimizer.py", "vllm/v1/core/block_pool.py", "vllm/v1/core/README.md"] }, c);
    expect(optimizer.targets.map((t) => t.id)).toEqual(["vllm-block-pool-gate", "sharded-optimizer"]);
  });

  it("an empty file is a valid config with every default", () => {
    expect(load("")).toEqual({
      enabled: true,
      agents: { defaults: true, authors: {}, coAuthors: {}, branchPrefixes: {}, labels: {} },
      routes: [],
      reruns: { perPrPerHour: 3, allowAgent: false },
      gate: false,
      budget: { perPrPerHour: 4 },
      feedback: { agentDetail: "categories" },
    });
  });

  it("names file, line and field of an unknown key", () => {
    const e = errorOf(() => load(GOOD.replace("  perPrPerHour: 2", "  perPrPerHour: 2\n  perDay: 5")));
    expect(e.message).toMatch(/probegate\.yml:19: reruns\.perDay: unknown field 'perDay'/);
    expect(e.where).toMatchObject({ field: "reruns.perDay", line: 19 });
    const top = errorOf(() => load(`${GOOD}routing: []\n`));
    expect(top.message).toMatch(/probegate\.yml:19: routing: unknown field 'routing'/);
  });

  it("names the line of a bad nested value", () => {
    const e = errorOf(() => load(GOOD.replace("task: sharded-optimizer", "task: Sharded Optimizer")));
    expect(e.message).toMatch(/probegate\.yml:8: routes\.0\.task: lower-case letters/);
    const e2 = errorOf(() => load(GOOD.replace("repository: acme/probegate-evaluator", "repository: probegate-evaluator")));
    expect(e2.message).toMatch(/probegate\.yml:15: evaluator\.repository: owner\/name/);
    const e3 = errorOf(() => load(GOOD.replace("perPrPerHour: 2", "perPrPerHour: -1")));
    expect(e3.where).toMatchObject({ field: "reruns.perPrPerHour", line: 18 });
  });

  it("requires exactly one of task or suite, and a way to match", () => {
    const both = errorOf(() => load("routes:\n  - task: a\n    suite: b\n    labels: [x]\n"));
    expect(both.message).toMatch(/probegate\.yml:3: routes\.0\.suite: a route names exactly one of 'task' or 'suite'/);
    const neither = errorOf(() => load("routes:\n  - labels: [x]\n"));
    expect(neither.message).toMatch(/probegate\.yml:2: routes\.0: a route names exactly one/);
    const never = errorOf(() => load("routes:\n  - task: a\n"));
    expect(never.message).toMatch(/routes\.0: a route needs 'labels', 'paths' or 'marker: true'/);
  });

  it("reports a YAML syntax error with its line", () => {
    const e = errorOf(() => load("routes:\n  - task: [a\n"));
    expect(e.message).toMatch(/probegate\.yml:\d+: probegate config is not valid YAML/);
  });

  it("is published as app-config.schema.json", () => {
    const schema = jsonSchemas()["app-config.schema.json"] as { $id: string; properties: Record<string, unknown>; additionalProperties: boolean };
    expect(schema.$id).toBe("https://probegate.dev/schema/app-config.schema.json");
    expect(Object.keys(schema.properties)).toEqual(["enabled", "agents", "routes", "evaluator", "reruns", "gate", "budget", "feedback", "allowUnsandboxed", "runners"]);
    expect(schema.additionalProperties).toBe(false);
  });
});

describe("routeTasks", () => {
  const config = (routes: AppConfigInput["routes"]) => AppConfigSchema.parse({ routes });
  const pr = (over: Partial<{ labels: string[]; body: string | null; changedPaths: string[] }> = {}) => ({
    labels: [],
    body: null,
    changedPaths: [],
    ...over,
  });
  const c = config([
    { task: "sharded-optimizer", labels: ["probegate:sharded-optimizer"], paths: ["dpopt/**"], marker: true },
    { task: "paged-kv-cache", paths: ["kvcache/**", "!kvcache/docs/**"] },
    { suite: "traffic-basics", paths: ["**/*.cu"], labels: ["needs-traffic"] },
    { task: "weight-sync", marker: false, labels: ["weights"] },
  ]);

  it("routes by label, case-insensitively", () => {
    expect(routeTasks(pr({ labels: ["ProbeGate:Sharded-Optimizer"] }), c).targets).toEqual([
      { kind: "task", id: "sharded-optimizer", why: ['label "probegate:sharded-optimizer"'] },
    ]);
  });

  it("routes by changed-path globs, including dot files and negations", () => {
    expect(routeTasks(pr({ changedPaths: ["README.md", "dpopt/.hidden/optim.py"] }), c).targets.map((t) => t.id)).toEqual(["sharded-optimizer"]);
    expect(routeTasks(pr({ changedPaths: ["kvcache/docs/a.md"] }), c).targets).toEqual([]);
    expect(routeTasks(pr({ changedPaths: ["src/kernels/a.cu"] }), c).targets).toEqual([
      { kind: "suite", id: "traffic-basics", why: ['changed file "src/kernels/a.cu" matches "**/*.cu"'] },
    ]);
  });

  it("routes by a PR-body marker only to routes that allow markers", () => {
    const body = "Fixes #3\n\n<!-- probegate-task: sharded-optimizer -->\nprobegate-task: weight-sync\nPROBEGATE-TASK: easy-task";
    const d = routeTasks(pr({ body }), c);
    expect(d.targets).toEqual([{ kind: "task", id: "sharded-optimizer", why: ['"probegate-task: sharded-optimizer" in the PR body'] }]);
    expect(d.ignoredMarkers).toEqual([
      { marker: "probegate-task: weight-sync", reason: `no route for task "weight-sync" has 'marker: true' in .github/probegate.yml` },
      { marker: "probegate-task: easy-task", reason: `no route in .github/probegate.yml names task "easy-task"` },
    ]);
  });

  it("lists each target once, with every reason, in config order", () => {
    const d = routeTasks(pr({ labels: ["needs-traffic", "probegate:sharded-optimizer"], changedPaths: ["dpopt/a.py", "k.cu"], body: "probegate-task: sharded-optimizer" }), c);
    expect(d.targets.map((t) => `${t.kind}:${t.id}`)).toEqual(["task:sharded-optimizer", "suite:traffic-basics"]);
    expect(d.targets[0]?.why).toHaveLength(3);
    const dup = config([
      { task: "a", labels: ["x"] },
      { task: "a", paths: ["*.py"] },
    ]);
    expect(routeTasks(pr({ labels: ["x"], changedPaths: ["m.py"] }), dup).targets).toEqual([{ kind: "task", id: "a", why: ['label "x"', 'changed file "m.py" matches "*.py"'] }]);
  });

  it("maps an unrelated PR to nothing", () => {
    expect(routeTasks(pr({ labels: ["bug"], changedPaths: ["README.md"], body: "no markers" }), c)).toEqual({ targets: [], ignoredMarkers: [] });
  });

  it("reads markers once each, in or out of HTML comments", () => {
    expect(bodyMarkers("probegate-suite: x\n  <!--probegate-suite:x-->\nnot probegate-task: y")).toEqual([{ kind: "suite", id: "x", text: "probegate-suite: x" }]);
  });
});
