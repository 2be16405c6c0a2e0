import { describe, expect, it } from "vitest";
import { packExamples, type DemoCase } from "../../src/cli/demo-command.js";
import { ROOT } from "../helpers.js";

/**
 * The committed pack's quick set (`quick: true` in examples/submissions/<task>/expected.yml), the
 * README's first command. It must stay short (20 CPU examples: under 7 minutes on 2 cores) and still
 * show what the pack shows, so that an edit to an expected.yml cannot quietly hollow it out.
 */
const examples = packExamples(ROOT);
/**
 * Tasks that need a GPU runner are skipped on CPU runners, and tasks with a pinned environment first
 * build it (torch 2.15 from PyPI, gigabytes): the quick set is of the others, which run on the
 * runner's interpreter. `npm test` evaluates every example of the pinned-environment tasks.
 */
const onCpu = (c: DemoCase) => !c.task.spec.requires.cuda && !c.task.spec.requires.gpus && !c.task.spec.environment;
const quick = examples.filter((c) => c.expectation.quick);
const quickOnCpu = quick.filter(onCpu);
const cpuTasks = [...new Set(examples.filter(onCpu).map((c) => c.task.spec.id))];
const name = (c: DemoCase) => `${c.task.spec.id}/${c.expectation.submission}`;
const categories = (cases: DemoCase[]) => [...new Set(cases.flatMap((c) => c.expectation.failedCategories))].sort();

describe("the committed pack's quick set", () => {
  it("holds 20 CPU examples, fewer than the whole pack", () => {
    expect(quickOnCpu.map(name)).toHaveLength(20);
    expect(examples.filter(onCpu).length).toBeGreaterThan(20);
    expect(cpuTasks.sort()).toEqual(["paged-kv-cache", "sharded-optimizer", "weight-sync"]);
  });

  it.each(cpuTasks)("has %s's reference, an alternative-correct submission and an official-failed example", (task) => {
    const mine = quickOnCpu.filter((c) => c.task.spec.id === task);
    expect(mine.filter((c) => c.expectation.submission === "reference.patch" && c.expectation.verdict === "resolved").map(name)).toHaveLength(1);
    expect(mine.filter((c) => c.expectation.submission.startsWith("alt-") && c.expectation.verdict === "resolved").map(name).length).toBeGreaterThanOrEqual(1);
    expect(mine.filter((c) => c.expectation.verdict === "official-failed").map(name).length).toBeGreaterThanOrEqual(1);
  });

  it("catches, on CPU, every probe category the pack catches", () => {
    const caught = categories(examples);
    expect(caught).toEqual(["functional", "memory", "state", "structure", "time", "traffic"]);
    expect(categories(quickOnCpu)).toEqual(caught);
  });

  it("holds no example of a task with a pinned environment or a GPU requirement", () => {
    const heavy = examples.filter((c) => !onCpu(c));
    expect([...new Set(heavy.map((c) => c.task.spec.id))].sort()).toEqual(["megatron-ddp-repeated-params", "verl-safe-masked-mean", "vllm-eagle-prefix-cache"]);
    expect(heavy.filter((c) => c.expectation.quick).map(name)).toEqual([]);
  });
});
