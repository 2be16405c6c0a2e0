import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { drawParams } from "../../src/core/probe-params.js";
import { openStore } from "../../src/store/db.js";
import { knownGoodHistories } from "../../src/store/probe-health.js";
import { FIXTURES, tmp } from "../helpers.js";
import { powerCommand } from "../../src/cli/power-command.js";
import { cli } from "./run-cli.js";

const POWER_TASK = join(FIXTURES, "tasks", "tiny-power");
const EXAMPLES = join(FIXTURES, "submissions");

/** tiny-power copied with only the probe that catches flaws, and only the examples it should catch. */
function goodCopy(): { task: string; examples: string } {
  const root = tmp();
  cpSync(join(FIXTURES, "tasks", "tiny-power"), join(root, "tasks", "tiny-power"), { recursive: true });
  cpSync(join(FIXTURES, "probes", "tiny-power"), join(root, "probes", "tiny-power"), { recursive: true });
  cpSync(join(EXAMPLES, "tiny-power"), join(root, "examples", "submissions", "tiny-power"), { recursive: true });
  rmSync(join(root, "probes", "tiny-power", "probe_idle.py"));
  rmSync(join(root, "probes", "tiny-power", "probe_strict.py"));
  const spec = join(root, "tasks", "tiny-power", "task.yml");
  writeFileSync(spec, readFileSync(spec, "utf8").replace("  - id: empty-list\n    text: total([]) is 0\n", ""));
  const expected = join(root, "examples", "submissions", "tiny-power", "expected.yml");
  writeFileSync(expected, readFileSync(expected, "utf8").split("- submission: slow.patch")[0] as string);
  return { task: join(root, "tasks", "tiny-power"), examples: join(root, "examples", "submissions") };
}

describe("probegate validate --power", () => {
  it("reports a probe that catches nothing, a probe that fails the reference, and a flaw no probe of its category catches; exit 1; --db records known-good runs", async () => {
    // Evaluation i draws its parameters from seed 7 + i: first-three (the 4th: every example once, then the repeats) must see more than 3 items.
    expect(drawParams({ n: { int: [1, 500] } }, 7 + 3).values.n).toBeGreaterThan(3);
    const db = join(tmp(), "store.sqlite");
    const r = await cli("validate", "--power", POWER_TASK, "--examples", EXAMPLES, "--runs", "2", "--seed", "7", "--db", db);
    expect(r.code).toBe(1);
    expect(r.err).toContain("tiny-power: 5 examples, 7 evaluations (2 per correct submission), 1 at a time");
    expect(r.err).toMatch(/\[1\/7\] tiny-power \/ reference\.patch run 1\/2 …[\s\S]*\[5\/7\] tiny-power \/ slow\.patch …[\s\S]*\[7\/7 done\] tiny-power \/ alt-loop\.patch run 2\/2 → probe-rejected/);
    const line = (check: string) => r.out.split("\n").find((l) => l.includes(` ${check} `))?.split("│").map((c) => c.trim()).filter(Boolean);
    expect(line("total-callable")).toEqual(["probe_idle", "total-callable", "structure", "0/2 failed", "0/2 failed", "pass", "pass", "pass"]);
    expect(line("empty-none")).toEqual(["probe_strict", "empty-none", "functional", "2/2 failed", "2/2 failed", "FAIL", "FAIL", "FAIL"]);
    expect(line("input-unchanged")).toEqual(["probe_value", "input-unchanged", "state", "0/2 failed", "0/2 failed", "FAIL", "pass", "pass"]);
    expect(line("total-value")).toEqual(["total-value", "functional", "0/2 failed", "0/2 failed", "pass", "FAIL", "pass"]);
    expect(r.out).toContain("✗ probe probe_idle catches nothing: none of its 1 checks fails any of the 3 flawed examples");
    expect(r.out).toContain("✗ check empty-none (probe_strict, functional) failed 2 of 2 runs of the correct submission reference.patch");
    expect(r.out).toContain("✗ flawed example slow.patch is not caught by any time check");
    expect(r.out).toContain("reference.patch: 2 of 2 runs not resolved (empty-none 2)");
    expect(r.out).toContain("quarantined now (store): empty-none (failed 4 of last 4 known-good)");
    const store = openStore(db);
    const sets = store.prepare("SELECT DISTINCT probe_set FROM known_good_outcomes").all() as Array<{ probe_set: string }>;
    expect(sets).toHaveLength(1);
    const histories = knownGoodHistories(store, { task: "tiny-power", probeSet: (sets[0] as { probe_set: string }).probe_set });
    store.close();
    expect(histories.map((h) => [h.check, h.statuses.join(",")])).toEqual([
      ["empty-none", "failed,failed,failed,failed"],
      ["input-unchanged", "passed,passed,passed,passed"],
      ["total-callable", "passed,passed,passed,passed"],
      ["total-value", "passed,passed,passed,passed"],
    ]);
  }, 120_000);

  it("passes (exit 0) when every probe catches a flaw, passes the correct submissions, and every requirement ran; JSON on request", async () => {
    const good = goodCopy();
    const r = await cli("validate", "--power", good.task, "--examples", good.examples, "--format", "json", "--jobs", "2");
    expect(r.code).toBe(0);
    const [report] = JSON.parse(r.out);
    expect(report).toMatchObject({ task: "tiny-power", scope: "all", ok: true, findings: [], staticProblems: [], quarantined: null });
    expect(report.columns.map((c: { submission: string; correct: boolean }) => [c.submission, c.correct])).toEqual([
      ["reference.patch", true],
      ["alt-loop.patch", true],
      ["mutates-input.patch", false],
      ["first-three.patch", false],
    ]);
    expect(report.falseRejections).toEqual([
      { submission: "reference.patch", runs: 1, rejected: 0, byCheck: {} },
      { submission: "alt-loop.patch", runs: 1, rejected: 0, byCheck: {} },
    ]);
  }, 120_000);

  it("starts no evaluation after --budget seconds and reports what ran", async () => {
    const good = goodCopy();
    const r = await cli("validate", "--power", good.task, "--examples", good.examples, "--runs", "20", "--budget", "1", "--format", "json");
    expect(r.err).toMatch(/--budget of 1 s reached: \d+ of 42 evaluations not started; the report covers the \d+ that ran/);
    const [report] = JSON.parse(r.out);
    const ran = report.columns.reduce((n: number, c: { runs: number }) => n + c.runs, 0);
    expect(ran).toBeGreaterThanOrEqual(1);
    expect(ran).toBeLessThan(42);
    // Round by round: the reference ran first.
    expect(report.columns[0].runs).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it("stops at once when interrupted, with the report of the evaluations that finished, not waiting for those in flight", async () => {
    const good = goodCopy();
    const stop = new AbortController();
    let out = "";
    let err = "";
    const io = {
      stdout: (s: string) => (out += s),
      stderr: (s: string) => {
        err += s;
        // Abort as the second evaluation finishes: two more are in flight then (--jobs 2).
        if ((err.match(/ done\] /g) ?? []).length === 2 && !stop.signal.aborted) stop.abort("SIGTERM");
      },
    };
    const code = await powerCommand([good.task], { examples: good.examples, runs: "20", jobs: "2", format: "json" }, io, stop.signal);
    expect(code).toBe(1);
    const [report] = JSON.parse(out);
    const ran = report.columns.reduce((n: number, c: { runs: number }) => n + c.runs, 0);
    expect(ran).toBe(2);
    const interrupted = report.findings.find((f: { kind: string }) => f.kind === "interrupted");
    expect(interrupted.message).toMatch(/^interrupted by SIGTERM: [12] evaluations in flight were abandoned and \d+ not started; this report covers the 2 that finished$/);
    expect(err).toMatch(/interrupted by SIGTERM: 2 evaluations finished, [12] in flight abandoned, \d+ not started/);
    expect(report.ok).toBe(false);
    // The examples it never reached say why they are unknown.
    expect(report.findings.filter((f: { kind: string }) => f.kind === "not-evaluated").every((f: { message: string }) => f.message.includes("(interrupted by SIGTERM first)"))).toBe(true);
  }, 60_000);

  it("--correct-only evaluates only the correct examples: no flawed columns, no catch findings, still the check that fails the reference", async () => {
    const r = await cli("validate", "--power", POWER_TASK, "--examples", EXAMPLES, "--correct-only", "--runs", "2");
    expect(r.code).toBe(1);
    expect(r.err).toContain("tiny-power: 2 correct examples of 5 (--correct-only: the flawed ones are not evaluated), 4 evaluations (2 per correct submission), 1 at a time");
    expect(r.err).not.toMatch(/mutates-input|first-three|slow/);
    expect(r.err).toContain("0 of 1 tasks pass probe-power validation (--correct-only: false rejections and requirements only; power not measured)");
    const lines = r.out.split("\n");
    expect(lines.slice(1, 3)).toEqual([
      "✗ tiny-power: false rejections (correct-only)",
      "! Correct-only run: only the correct submissions were evaluated, so this measures false rejections only; what the probes catch (their power) needs a run without --correct-only.",
    ]);
    const line = (check: string) => lines.find((l) => l.includes(` ${check} `))?.split("│").map((c) => c.trim()).filter(Boolean);
    expect(line("check")).toEqual(["probe", "check", "category", "reference ✓ ×2", "alt-loop ✓ ×2"]);
    expect(line("total-callable")).toEqual(["probe_idle", "total-callable", "structure", "0/2 failed", "0/2 failed"]);
    expect(line("empty-none")).toEqual(["probe_strict", "empty-none", "functional", "2/2 failed", "2/2 failed"]);
    expect(r.out).toContain("✗ check empty-none (probe_strict, functional) failed 2 of 2 runs of the correct submission reference.patch");
    expect(r.out).toContain("reference.patch: 2 of 2 runs not resolved (empty-none 2)");
    // probe_idle catches nothing and slow.patch is caught by no time check: neither can be known here.
    expect(r.out).not.toMatch(/catches nothing|not caught|slow\.patch|not evaluated/);
  }, 120_000);

  it("--correct-only --format json: the report's scope, the correct columns only, the findings of the correct ones", async () => {
    const r = await cli("validate", "--power", POWER_TASK, "--examples", EXAMPLES, "--correct-only", "--format", "json");
    expect(r.code).toBe(1);
    const [report] = JSON.parse(r.out);
    expect(report.scope).toBe("correct-only");
    expect(report.columns.map((c: { submission: string }) => c.submission)).toEqual(["reference.patch", "alt-loop.patch"]);
    // What a merge of several reports needs to judge again: the declared requirements, and why a run was unexpected.
    expect(report.requirements).toEqual(["total-value", "input-unchanged", "empty-list"]);
    expect(report.columns[0].unexpected).toMatch(/empty-none failed/);
    expect(report.matrix.head).toEqual(["probe", "check", "category", "reference ✓", "alt-loop ✓"]);
    expect(report.findings.map((f: { kind: string; subject: string }) => [f.kind, f.subject])).toEqual([
      ["fails-correct", "probe_strict/empty-none"],
      ["fails-correct", "probe_strict/empty-none"],
      ["unexpected-verdict", "reference.patch"],
      ["unexpected-verdict", "alt-loop.patch"],
    ]);
  }, 120_000);

  it("refuses --correct-only without --power, naming the flag", async () => {
    const r = await cli("validate", POWER_TASK, "--correct-only");
    expect(r.code).toBe(2);
    expect(r.err).toBe("probegate: validate: --correct-only only mean something with --power.\n");
  });

  it("refuses --correct-only on a task whose expected.yml lists no correct example, naming the file", async () => {
    const good = goodCopy();
    const expected = join(good.examples, "tiny-power", "expected.yml");
    writeFileSync(expected, `- submission: mutates-input.patch${readFileSync(expected, "utf8").split("- submission: mutates-input.patch")[1]}`);
    const r = await cli("validate", "--power", good.task, "--examples", good.examples, "--correct-only");
    expect(r.code).toBe(2);
    expect(r.err).toContain(`tiny-power: ${expected} lists no correct example (verdict: resolved), so --correct-only has nothing to evaluate.`);
  });

  it("refuses --power's flags without --power, and names a missing expected.yml", async () => {
    const misuse = await cli("validate", POWER_TASK, "--runs", "3");
    expect(misuse.code).toBe(2);
    expect(misuse.err).toContain("--runs only mean something with --power");
    const missing = await cli("validate", "--power", POWER_TASK, "--examples", tmp());
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/tiny-power: no .*tiny-power\/expected\.yml; --power evaluates the task's examples/);
  });
});

describe("probegate merge-power", () => {
  it("merges a correct-only report into a full one: runs add up, judged again, printed as validate prints; exit 0", async () => {
    const good = goodCopy();
    const dir = tmp();
    const full = await cli("validate", "--power", good.task, "--examples", good.examples, "--format", "json", "--jobs", "2");
    const more = await cli("validate", "--power", good.task, "--examples", good.examples, "--correct-only", "--runs", "2", "--format", "json", "--jobs", "2");
    expect([full.code, more.code]).toEqual([0, 0]);
    writeFileSync(join(dir, "full.json"), full.out);
    writeFileSync(join(dir, "more.json"), more.out);
    const r = await cli("merge-power", join(dir, "more.json"), join(dir, "full.json"), "--format", "json");
    expect(r.code).toBe(0);
    expect(r.err).toBe("tiny-power: 2 reports merged, 8 evaluations\n");
    const [report] = JSON.parse(r.out);
    expect(report).toMatchObject({ task: "tiny-power", scope: "all", ok: true, findings: [], staticProblems: [] });
    expect(report.columns.map((c: { submission: string; runs: number }) => [c.submission, c.runs])).toEqual([
      ["reference.patch", 3],
      ["alt-loop.patch", 3],
      ["mutates-input.patch", 1],
      ["first-three.patch", 1],
    ]);
    expect(report.falseRejections).toEqual([
      { submission: "reference.patch", runs: 3, rejected: 0, byCheck: {} },
      { submission: "alt-loop.patch", runs: 3, rejected: 0, byCheck: {} },
    ]);
    const text = await cli("merge-power", join(dir, "more.json"), join(dir, "full.json"));
    expect(text.code).toBe(0);
    const head = text.out.split("\n").find((l) => l.includes(" check "))?.split("│").map((c) => c.trim()).filter(Boolean);
    expect(head).toEqual(["probe", "check", "category", "reference ✓ ×3", "alt-loop ✓ ×3", "mutates-input", "first-three"]);
    // Alone, the correct-only report still measures no power: merged with itself it stays correct-only.
    const alone = await cli("merge-power", join(dir, "more.json"), join(dir, "more.json"), "--format", "json");
    expect(JSON.parse(alone.out)[0].scope).toBe("correct-only");
  }, 120_000);

  it("names the file that is missing, not JSON, or not a power report, and refuses reports of two probe sets; exit 2", async () => {
    const dir = tmp();
    const missing = await cli("merge-power", join(dir, "nope.json"));
    expect([missing.code, missing.err]).toEqual([2, `probegate: ${join(dir, "nope.json")}: cannot read it (ENOENT)\n`]);
    writeFileSync(join(dir, "log.txt"), "tiny-power: 5 examples\n");
    const notJson = await cli("merge-power", join(dir, "log.txt"));
    expect(notJson.code).toBe(2);
    expect(notJson.err).toContain(`${join(dir, "log.txt")}: not JSON (`);
    expect(notJson.err).toContain("pass the output of validate --power --format json");
    writeFileSync(join(dir, "other.json"), JSON.stringify([{ task: "tiny-power", columns: [], rows: [] }, { summary: "x" }]));
    const notReport = await cli("merge-power", join(dir, "other.json"));
    expect([notReport.code, notReport.err]).toEqual([2, `probegate: ${join(dir, "other.json")}: entry 1 is not a power report (no task, columns and rows); pass the output of validate --power --format json\n`]);
    const good = goodCopy();
    const run = await cli("validate", "--power", good.task, "--examples", good.examples, "--correct-only", "--format", "json");
    writeFileSync(join(dir, "a.json"), run.out);
    const [report] = JSON.parse(run.out);
    writeFileSync(join(dir, "b.json"), JSON.stringify([{ ...report, probeSet: "sha256:0123" }]));
    const sets = await cli("merge-power", join(dir, "a.json"), join(dir, "b.json"));
    expect(sets.code).toBe(2);
    expect(sets.err).toMatch(/tiny-power: reports of different probe sets .*the probes changed between them.*\(.*a\.json, .*b\.json\)/);
  }, 120_000);
});

describe("probegate validate: requirement coverage", () => {
  it("accepts a task whose every requirement a probe names", async () => {
    const r = await cli("validate", POWER_TASK);
    expect(r.code).toBe(0);
    expect(r.out).toContain("✓ tiny-power: 1 interfaces stated, 3 requirements named by probes, 3 probe files");
  });

  it("names the task.yml line of a requirement no probe names, and the probe line of an undeclared one", async () => {
    const good = goodCopy();
    const spec = join(good.task, "task.yml");
    writeFileSync(spec, readFileSync(spec, "utf8").replace("params:", "  - id: never-named\n    text: stated, never checked\nparams:"));
    const probe = join(good.task, "..", "..", "probes", "tiny-power", "probe_value.py");
    writeFileSync(probe, readFileSync(probe, "utf8").replace('requirements=["input-unchanged"]', 'requirements=["input-unchanged", "inputs-unchanged"]'));
    const r = await cli("validate", good.task);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/task\.yml:3\d: requirements: 'never-named' is named by no probe check/);
    expect(r.err).toMatch(/probe_value\.py:1\d: names requirement 'inputs-unchanged', which .*task\.yml does not declare/);
  });
});

describe("probegate eval --db: the store's quarantine, as the app reads it", () => {
  const sub = (name: string) => join(EXAMPLES, "tiny-power", `${name}.patch`);

  it("records canary runs with --known-good; once a check failed known-good code twice its failures are warnings", async () => {
    const db = join(tmp(), "store.sqlite");
    const first = await cli("eval", "--task", POWER_TASK, "--submission", sub("reference"), "--db", db, "--known-good");
    expect(first.code).toBe(1);
    expect(first.err).toContain("recorded 4 checks of this run as known-good outcomes");
    expect(first.err).not.toContain("quarantined");
    const second = await cli("eval", "--task", POWER_TASK, "--submission", sub("reference"), "--db", db, "--known-good", "--format", "markdown");
    expect(second.code).toBe(0);
    expect(second.err).toContain("quarantined checks of this probe set: empty-none (failed 2 of last 2 known-good)");
    expect(second.err).toContain("read with quarantined failures set aside as warnings: resolved (the result says probe-rejected)");
    expect(second.out).toContain("| `empty-none` | functional | failed | 2 of last 2 |");
    const flawed = await cli("eval", "--task", POWER_TASK, "--submission", sub("mutates-input"), "--db", db, "--format", "json");
    expect(flawed.code).toBe(1);
    expect(JSON.parse(flawed.out).verdict).toBe("probe-rejected");
  }, 60_000);

  it("refuses --known-good without a store", async () => {
    const r = await cli("eval", "--task", POWER_TASK, "--submission", sub("reference"), "--known-good");
    expect(r.code).toBe(2);
    expect(r.err).toContain("--known-good records the run in a store: pass --db <file> too.");
  });
});
