import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EvaluationResultSchema } from "../../src/core/result.js";
import { ROOT, TINY_SUBS, TINY_TASK, FIXTURES, tmp } from "../helpers.js";
import { cli } from "./run-cli.js";

const sub = (name: string) => join(TINY_SUBS, `${name}.patch`);

describe("probegate eval", () => {
  it("exits 0 for resolved, writes the result, shows phases on stderr", async () => {
    const out = join(tmp(), "result.json");
    const r = await cli("eval", "--task", TINY_TASK, "--submission", sub("reference"), "--out", out);
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/▸ workspace[\s\S]*▸ official tests[\s\S]*▸ hidden probes[\s\S]*probe_state/);
    expect(r.out).toContain("RESOLVED");
    expect(EvaluationResultSchema.parse(JSON.parse(readFileSync(out, "utf8"))).verdict).toBe("resolved");
  });

  it("exits 1 for rejected and prints markdown or JSON on request", async () => {
    const md = await cli("eval", "--task", TINY_TASK, "--submission", sub("mutates-input"), "--format", "markdown");
    expect(md.code).toBe(1);
    expect(md.out).toContain("| state | 0 | 1 | 0 | 0 |");
    const json = await cli("eval", "--task", TINY_TASK, "--submission", sub("fails-official"), "--format", "json");
    expect(json.code).toBe(1);
    expect(JSON.parse(json.out).verdict).toBe("official-failed");
  });

  it("refuses to run unsandboxed where bubblewrap is missing (exit 3) unless told --unsandboxed", async () => {
    process.env.PROBEGATE_BWRAP = "/nonexistent/bwrap";
    try {
      const refused = await cli("eval", "--task", TINY_TASK, "--submission", sub("reference"), "--format", "json");
      expect(refused.code).toBe(3);
      expect(JSON.parse(refused.out)).toMatchObject({ verdict: "error", official: null, error: { phase: "sandbox" }, environment: { sandboxed: false } });
      expect(JSON.parse(refused.out).error.message).toMatch(/refusing to run submission code unsandboxed: .*\/nonexistent\/bwrap.*pass --unsandboxed/);
      const out = join(tmp(), "result.json");
      const ran = await cli("eval", "--task", TINY_TASK, "--submission", sub("reference"), "--format", "markdown", "--out", out, "--unsandboxed");
      expect(ran.code).toBe(0);
      expect(ran.out).toContain(", unsandboxed");
      expect(JSON.parse(readFileSync(out, "utf8")).environment.sandboxed).toBe(false);
    } finally {
      delete process.env.PROBEGATE_BWRAP;
    }
  });

  it("exits 3 for a harness error", async () => {
    expect((await cli("eval", "--task", TINY_TASK, "--submission", sub("reference"), "--python", "/nope")).code).toBe(3);
  });

  describe("bad input: exit 2, one clear paragraph, no partial result file", () => {
    const out = join(tmp(), "never.json");
    const cases: Array<[string, string[], RegExp]> = [
      ["missing task", ["--task", "/nonexistent/task", "--submission", sub("reference")], /Cannot read task spec .*task\.yml: no such file/],
      ["unreadable submission", ["--task", TINY_TASK, "--submission", "/nonexistent/sub"], /--submission: '\/nonexistent\/sub' is not an existing folder/],
      ["bad format", ["--task", TINY_TASK, "--submission", sub("reference"), "--format", "xml"], /format/],
      ["bad world size", ["--task", TINY_TASK, "--submission", sub("reference"), "--world-size", "two"], /--world-size: expected a whole number/],
      ["bad gpus", ["--task", TINY_TASK, "--submission", sub("reference"), "--gpus", "first"], /--gpus: expected 'all', 'none' or indices/],
      ["missing flag", ["--task", TINY_TASK], /required option '--submission/],
      ["bad max processes", ["--task", TINY_TASK, "--submission", sub("reference"), "--max-processes", "2"], /--max-processes: expected a whole number ≥ 8, got '2'/],
      ["bad max disk", ["--task", TINY_TASK, "--submission", sub("reference"), "--max-disk", "lots"], /--max-disk: expected a size of at least 1MiB like 512MiB or 4GiB, got 'lots'/],
    ];
    it.each(cases)("%s", async (_n, args, msg) => {
      const r = await cli("eval", ...args, "--out", out);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(msg);
      expect(existsSync(out)).toBe(false);
    });

    it("a patch that does not apply", async () => {
      const bad = join(tmp(), "bad.patch");
      writeFileSync(bad, "--- a/nothere.py\n+++ b/nothere.py\n@@ -1 +1 @@\n-x\n+y\n");
      const r = await cli("eval", "--task", TINY_TASK, "--submission", bad, "--out", out);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/patch .*bad\.patch does not apply onto the base: .*nothere\.py/);
      expect(existsSync(out)).toBe(false);
    });

    it("an invalid task file names file, field and line", async () => {
      const root = tmp();
      cpSync(TINY_TASK, join(root, "tasks", "tiny-sum"), { recursive: true });
      cpSync(join(FIXTURES, "probes"), join(root, "probes"), { recursive: true });
      const file = join(root, "tasks", "tiny-sum", "task.yml");
      writeFileSync(file, readFileSync(file, "utf8").replace("timeout: 60", "timeout: soon"));
      const r = await cli("eval", "--task", join(root, "tasks", "tiny-sum"), "--submission", sub("reference"), "--out", out);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/task\.yml:\d+: official\.timeout: /);
    });
  });
});

describe("probegate validate", () => {
  it("accepts the fixture task", async () => {
    const r = await cli("validate", TINY_TASK);
    expect(r.code).toBe(0);
    expect(r.out).toContain("✓ tiny-sum: 1 interfaces stated, 3 requirements named by probes, 2 probe files");
  });

  it("finds an interface missing from the prompt and probe source quoted in it", async () => {
    const root = tmp();
    const dir = join(root, "tasks", "tiny-sum");
    cpSync(TINY_TASK, dir, { recursive: true });
    cpSync(join(FIXTURES, "probes"), join(root, "probes"), { recursive: true });
    writeFileSync(join(dir, "task.yml"), readFileSync(join(dir, "task.yml"), "utf8").replace("  - total", "  - total\n  - grand_total"));
    writeFileSync(join(dir, "prompt.md"), "Add total(). Hint: ratio = best(sumlib.total) / best(loop)\n");
    const r = await cli("validate", dir);
    expect(r.code).toBe(2);
    expect(r.err).toContain("'grand_total' is called by the probes but never named in prompt.md");
    expect(r.err).toMatch(/quotes probe source probe_time\.py:\d+/);
  });

  it("reports a missing folder", async () => {
    expect((await cli("validate", "/nonexistent")).code).toBe(2);
  });
});

describe("the built bundle", () => {
  it("dist/cli/index.js runs as the bin with the same exit codes", () => {
    const bin = join(ROOT, "dist", "cli", "index.js");
    const ok = spawnSync(process.execPath, [bin, "eval", "--task", TINY_TASK, "--submission", sub("reference"), "--format", "json"], { encoding: "utf8" });
    expect(ok.status).toBe(0);
    expect(JSON.parse(ok.stdout).verdict).toBe("resolved");
    const bad = spawnSync(process.execPath, [bin, "eval", "--task", "/nope", "--submission", "x"], { encoding: "utf8" });
    expect(bad.status).toBe(2);
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
    expect(execFileSync(process.execPath, [bin, "--version"]).toString().trim()).toBe(pkg.version);
  });

  it("stops quietly when the reader closes the pipe early (| head)", () => {
    // 13 H200 power reports merged as JSON are ~190 KB, more than a pipe holds, so `head -c 10`
    // closes the pipe while the bin still writes: no unhandled EPIPE, no stack trace.
    const bin = join(ROOT, "dist", "cli", "index.js");
    const power = join(ROOT, "bench", "results", "h200-2026-12-04-sessions8-11", "power");
    const r = spawnSync("bash", ["-c", `"$0" "$1" merge-power "$2"/*.json --format json | head -c 10`, process.execPath, bin, power], { encoding: "utf8" });
    expect(r.stdout).toBe('[\n  {\n    ');
    expect(r.stderr).toContain("weight-sync: 5 reports merged");
    expect(r.stderr).not.toMatch(/EPIPE|Unhandled|at .*\.js:\d+/);
  });
});
