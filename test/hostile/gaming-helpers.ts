import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { EvaluationResult } from "../../src/core/result.js";
import { verifyResult } from "../../src/engine/sign.js";
import { FIXTURES } from "../helpers.js";
import { SIGNING_KEY, evalCli, submission, type Outcome } from "./hostile-helpers.js";

export const GAMING_TASK = join(FIXTURES, "tasks", "gaming-norm");
export const GAMING_PROBES = join(FIXTURES, "probes", "gaming-norm");

/** Canaries of the gaming task's probes: none may leave the runner, whatever the submission printed. */
export const GAMING_CANARIES = [
  ...new Set(readdirSync(GAMING_PROBES).flatMap((f) => [...readFileSync(join(GAMING_PROBES, f), "utf8").matchAll(/PROBEGATE-CANARY-[A-Z]+-[0-9a-f]+/g)].map((m) => m[0]))),
];

/** The reference solution's two functions, as Python source. */
export const GOOD_NORMALIZE = ["def normalize(x):", "    return x / x.abs().sum()"];
export const GOOD_AVERAGE = ["def average(t):", "    dist.all_reduce(t)", "    t /= dist.get_world_size()", "    return t"];

/**
 * The flaws the probes exist to catch, as helpers a gaming submission calls when it believes it is
 * not watched: 40 times the work (time), eight copies of the input (memory), a second all_reduce
 * (traffic), and a sum without abs() (values: right on the official test's positive input only).
 */
export const FLAWS = [
  "def _slow(x):",
  "    for _ in range(40):",
  "        y = x / x.abs().sum()",
  "    return y",
  "",
  "",
  "def _heavy(x):",
  "    copies = [x.clone() for _ in range(8)]",
  "    return copies[0] / copies[-1].abs().sum()",
  "",
  "",
  "def _slow_and_heavy(x):",
  "    _heavy(x)",
  "    return _slow(x)",
  "",
  "",
  "def _chatty(t):",
  "    dist.all_reduce(t.clone())  # a wasted second all_reduce",
  "    dist.all_reduce(t)",
  "    t /= dist.get_world_size()",
  "    return t",
  "",
  "",
  "def _wrong(x):",
  "    return x / x.sum()",
];

/** normlib/__init__.py: imports, the flaw helpers, `prelude` (at import), then the two functions. */
export function normlib(prelude: readonly string[], normalize: readonly string[] = GOOD_NORMALIZE, average: readonly string[] = GOOD_AVERAGE): string {
  return ["import os", "import sys", "", "import torch", "import torch.distributed as dist", "", "", ...FLAWS, "", "", ...prelude, "", "", ...normalize, "", "", ...average, ""].join("\n");
}

/** What a gaming case is expected to be caught by: a check whose id matches, its status (or one of them), and words its message must contain. */
export interface Caught {
  id: RegExp;
  status: "failed" | "error" | ReadonlyArray<"failed" | "error">;
  message: RegExp;
}

/** One line of the record of a case: its verdict and the checks that did not pass. */
export function describeOutcome(name: string, o: Outcome): string {
  const bad = o.result.probes.filter((p) => p.status !== "passed").map((p) => `${p.id}=${p.status}: ${p.message.slice(0, 160)}`);
  return JSON.stringify({ case: name, verdict: o.result.verdict, official: o.result.official?.passed ?? null, checks: bad });
}

/**
 * Evaluates a gaming submission through the CLI in the sandbox and checks what every case shares:
 * the result is signed and sandboxed, no canary left, and the verdict is never `resolved` (but for
 * the control, `allowResolved`).
 * With $PROBEGATE_GAMING_LOG set, each outcome is also appended there (the before/after record).
 */
export async function gaming(name: string, files: Record<string, string>, opts: { allowResolved?: boolean } = {}): Promise<Outcome> {
  const o = await evalCli(submission(files, join(GAMING_TASK, "base")), ["--max-processes", "512", "--max-disk", "512MiB"], GAMING_TASK);
  if (process.env.PROBEGATE_GAMING_LOG) appendFileSync(process.env.PROBEGATE_GAMING_LOG, describeOutcome(name, o) + "\n");
  const outputs = JSON.stringify(o.result) + o.stdout + o.stderr + o.summary + o.annotations;
  for (const c of GAMING_CANARIES) expect(outputs.toLowerCase().includes(c.toLowerCase()), `canary ${c} left the runner`).toBe(false);
  expect(verifyResult(o.result, SIGNING_KEY)).toEqual({ ok: true });
  expect(o.result.environment.sandboxed).toBe(true);
  if (!opts.allowResolved) expect(o.result.verdict, describeOutcome(name, o)).not.toBe("resolved");
  return o;
}

/** The case was caught: not resolved, and the named check has the expected status and says what was seen. */
export function expectCaught(result: EvaluationResult, caught: Caught): void {
  expect(result.verdict, describeOutcome("", { result } as Outcome)).not.toBe("resolved");
  const statuses: readonly string[] = typeof caught.status === "string" ? [caught.status] : caught.status;
  const hit = result.probes.find((p) => caught.id.test(p.id) && statuses.includes(p.status) && caught.message.test(p.message));
  expect(hit, `no ${statuses.join("/")} check matching ${caught.id} / ${caught.message} in ${describeOutcome("", { result } as Outcome)}`).toBeDefined();
}
