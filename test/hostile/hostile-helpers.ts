import { cpSync, readFileSync, readdirSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { renderCheckRun, renderSummary } from "../../src/core/check-run-render.js";
import { EvaluationResultSchema, type EvaluationResult } from "../../src/core/result.js";
import { main } from "../../src/cli/main.js";
import { findControllers } from "../../src/engine/sandbox/cgroup.js";
import { verifyResult } from "../../src/engine/sign.js";
import { FIXTURES, TINY_TASK, tmp } from "../helpers.js";

export const HOSTILE_TASK = join(FIXTURES, "tasks", "hostile-sum");
export const HOSTILE_PROBES = join(FIXTURES, "probes", "hostile-sum");
export const SIGNING_KEY = "hostile-suite-signing-key-7d2f0c9e";

/** Every canary planted in the hostile task's probes, read from the probe files themselves. */
export const CANARIES = [
  ...new Set(
    readdirSync(HOSTILE_PROBES).flatMap((f) => [...readFileSync(join(HOSTILE_PROBES, f), "utf8").matchAll(/PROBEGATE-CANARY-[A-Z]+-[0-9a-f]+/g)].map((m) => m[0])),
  ),
];

/** Long lines of the probes' source: none may leave the runner. */
export const PROBE_LINES = readdirSync(HOSTILE_PROBES).flatMap((f) =>
  readFileSync(join(HOSTILE_PROBES, f), "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.length >= 30),
);

/** sumlib/__init__.py: `prelude` runs at import, then add() and a total() whose body is `body`. */
export function sumlib(prelude: readonly string[], body: readonly string[]): string {
  return [...prelude, "", "", "def add(a, b):", "    return a + b", "", "", "def total(xs):", ...body.map((l) => `    ${l}`), ""].join("\n");
}

export const GOOD = sumlib([], ["return sum(xs)"]);
export const WRONG = sumlib([], ["return 0"]);
export const MUTATES = sumlib([], ["s = 0", "while xs:", "    s += xs.pop()", "return s"]);
export const SLOW = sumlib(["import time as _t"], ["_t.sleep(0.05)", "return sum(xs)"]);

/** A whole-tree submission: the task's base (tiny-sum's unless `base` names another) with `files` written over it. */
export function submission(files: Record<string, string>, base = join(TINY_TASK, "base")): string {
  const dir = join(tmp("pg-hostile-sub-"), "sub");
  cpSync(base, dir, { recursive: true });
  for (const [path, content] of Object.entries(files)) writeFileSync(join(dir, path), content);
  return dir;
}

/** Everything one evaluation sent out: the result, what the CLI printed, the summary and annotations. */
export interface Outcome {
  result: EvaluationResult;
  exitCode: number;
  stdout: string;
  stderr: string;
  summary: string;
  annotations: string;
}

/** Runs `probegate eval` in this process, as an operator would, with tight run limits (the hostile task unless `task` names another). */
export async function evalCli(sub: string, extra: string[] = [], task = HOSTILE_TASK): Promise<Outcome> {
  const out = join(tmp("pg-hostile-out-"), "result.json");
  let stdout = "";
  let stderr = "";
  const args = ["eval", "--task", task, "--submission", sub, "--format", "markdown", "--out", out, "--max-processes", "128", "--max-disk", "64MiB", ...extra];
  const exitCode = await main(args, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s) });
  expect(existsSync(out), `no result file; stderr:\n${stderr}`).toBe(true);
  const result = EvaluationResultSchema.parse(JSON.parse(readFileSync(out, "utf8")));
  const run = renderCheckRun(result);
  return { result, exitCode, stdout, stderr, summary: renderSummary(result), annotations: JSON.stringify(run) };
}

/** No canary and no line of probe source in anything the evaluation sent out; the signature holds. */
export function expectNoLeak(o: Outcome): void {
  const outputs = { result: JSON.stringify(o.result), stdout: o.stdout, stderr: o.stderr, summary: o.summary, annotations: o.annotations };
  for (const [where, text] of Object.entries(outputs)) {
    for (const c of CANARIES) expect(text.toLowerCase().includes(c.toLowerCase()), `canary ${c} in ${where}`).toBe(false);
    for (const l of PROBE_LINES) expect(text.includes(l), `probe line '${l}' in ${where}`).toBe(false);
  }
  expect(verifyResult(o.result, SIGNING_KEY)).toEqual({ ok: true });
  expect(o.result.environment.sandboxed).toBe(true);
}

/** Processes of a hostile evaluation still alive (found by the workspace path in their environment). */
export function strayProcesses(): string[] {
  const strays: string[] = [];
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const env = readFileSync(`/proc/${pid}/environ`, "utf8");
      if (env.includes("probegate-hostile-sum-")) strays.push(`${pid}: ${readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ")}`);
    } catch {
      // Gone, or a kernel thread.
    }
  }
  return strays;
}

/** Cgroups this test process made that are still there. */
export function strayCgroups(): string[] {
  const ctl = findControllers();
  if (!ctl) return [];
  const parents = ctl.version === 2 ? [ctl.parent] : [ctl.memory, ctl.pids];
  return parents.flatMap((p) => readdirSync(p).filter((n) => n.startsWith(`probegate-${process.pid}-`)).map((n) => join(p, n)));
}
