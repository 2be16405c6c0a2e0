import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { tmp } from "../helpers.js";
import { makeRepo, OPS_BROKEN, packFiles, TEST_BOTH } from "./import-repo.js";
import { cli } from "./run-cli.js";

describe("probegate task import", () => {
  let repo: ReturnType<typeof makeRepo>;
  beforeAll(() => {
    repo = makeRepo();
  });

  const imp = (pack: string, head: string, ...more: string[]) =>
    cli("task", "import", "--repo", repo.dir, "--pr-base", repo.base, "--pr-head", head, "--tests", "tests/**", "--out", join(pack, "tasks", "tiny-add"), ...more);

  it("finds the fail-to-pass and pass-to-pass tests by running them, and writes a task the engine runs", async () => {
    const pack = tmp("pg-import-pack-");
    const r = await imp(pack, repo.fix, "--trace-imports", "--keep", "LICENSE");
    expect(r.err).toMatch(/before the change[\s\S]*1 passed, 1 failed[\s\S]*after the change[\s\S]*2 passed, 0 failed/);
    expect(r.code).toBe(0);
    // Where the user meets the snapshot's limit first: the import's own summary.
    expect(r.out).toContain("base: pruned snapshot of 4 of the repository's 6 files: a submission patch may edit only these. To gate real PRs, which may touch any file, import with --base-as git.");
    const task = join(pack, "tasks", "tiny-add");
    const record = parse(readFileSync(join(task, "import.yml"), "utf8"));
    expect(record.fail_to_pass).toEqual(["tests/test_ops.py::test_add"]);
    expect(record.pass_to_pass).toEqual(["tests/test_ops.py::test_neg"]);
    const spec = parse(readFileSync(join(task, "task.yml"), "utf8"));
    expect(spec.official.command.slice(-2)).toEqual(["tests/test_ops.py::test_add", "tests/test_ops.py::test_neg"]);
    expect(spec.official.files).toEqual(["tests/test_ops.py"]);
    // The snapshot: the change's file, the PR's test (head version), what it imports, what --keep names; not calc/unused.py.
    expect(packFiles(join(task, "base")).map((p) => p.slice(task.length + 6))).toEqual(["LICENSE", "calc/__init__.py", "calc/ops.py", "tests/test_ops.py"]);
    expect(readFileSync(join(task, "base", "tests", "test_ops.py"), "utf8")).toBe(TEST_BOTH);
    expect(readFileSync(join(task, "base", "calc", "ops.py"), "utf8")).toBe(OPS_BROKEN);
    const examples = join(pack, "examples", "submissions", "tiny-add");
    expect(readFileSync(join(examples, "reference.patch"), "utf8")).toContain("+    return a + b");
    expect(readFileSync(join(examples, "reference.patch"), "utf8")).not.toContain("tests/test_ops.py");
    // The prompt keeps the PR's prose and drops its template: checklists, comments, guidance, empty headings.
    const prompt = readFileSync(join(task, "prompt.md"), "utf8");
    expect(prompt).toContain("# Fix add (#7)\n\n### What does this PR do?\n\nadd subtracted its arguments; it now adds them.\n\n## What to change");
    for (const boilerplate of ["- [", "Describe your change", "Checklist", "Search for similar PRs", "concise", "can not be tested by CI", "List the specific changes", "### Test", "### Specific Changes", "Contribute"]) {
      expect(prompt).not.toContain(boilerplate);
    }

    // validate holds the skeletons to the rules until the author finishes them.
    const v = await cli("validate", task);
    expect(v.code).toBe(2);
    expect(v.err).toMatch(/prompt\.md: still the skeleton[\s\S]*probe_functional\.py: still the probe skeleton/);

    const ref = await cli("eval", "--task", task, "--submission", join(examples, "reference.patch"), "--format", "json");
    const refResult = JSON.parse(ref.out);
    expect(refResult.official).toMatchObject({ passed: true, counts: { total: 2, passed: 2 } });
    expect(refResult.verdict).toBe("error"); // the probe skeleton reports error until written: never a pass
    // The progress line counts an errored check as errored, not as passed.
    expect(ref.err).toMatch(/hidden probes done in [^:]+: 0 of 1 passed, 1 errored\n/);
    const none = await cli("eval", "--task", task, "--submission", join(examples, "base.patch"), "--format", "json");
    const noneResult = JSON.parse(none.out);
    expect(noneResult).toMatchObject({ verdict: "official-failed", official: { counts: { passed: 1, failed: 1 } } });
    // pytest's multi-line message attribute ("assert -1 == 5&#10; +  where …") arrives decoded.
    expect(noneResult.official.failing[0].message).toMatch(/^assert -1 == 5\n \+  where -1 = add\(2, 3\)/);
    // The text output names the failing test, where it failed and its message's first line.
    const text = await cli("eval", "--task", task, "--submission", join(examples, "base.patch"));
    expect(text.out).toContain("official tests: 1 passed, 1 failed, 0 errors, 0 skipped");
    expect(text.out).toContain("  ✗ tests/test_ops.py::test_add (tests/test_ops.py:9) — assert -1 == 5\n");
    expect(text.out).not.toContain("&#10;");

    // A patch that edits a file the snapshot left out is refused, naming the file, why, and --base-as git.
    const outside = join(pack, "outside.patch");
    writeFileSync(outside, "diff --git a/calc/unused.py b/calc/unused.py\n--- a/calc/unused.py\n+++ b/calc/unused.py\n@@ -1 +1 @@\n-X = 1\n+X = 2\n");
    const refused = await cli("eval", "--task", task, "--submission", outside);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain(`patch ${outside} does not apply onto the base: it edits calc/unused.py, which the base does not have; the task's base`);
    expect(refused.err).toContain("is a pruned snapshot that probegate task import kept (import.yml), not the whole repository");
    expect(refused.err).toContain("re-import the task with `probegate task import --base-as git`");
  });

  it("records the base as a git ref with the PR's tests as overlay, which the engine exports", async () => {
    const pack = tmp("pg-import-pack-");
    // The test repository has no origin remote: a git base needs to know where to clone from.
    const unknown = await imp(tmp("pg-import-pack-"), repo.fix, "--base-as", "git");
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain(`--base-as git: task.yml must say where to clone the base from, and ${repo.dir} has no origin remote`);
    expect(unknown.err).toContain("give it with --repo-url");
    const r = await imp(pack, repo.fix, "--base-as", "git", "--repo-url", repo.dir);
    expect(r.code).toBe(0);
    expect(r.err).toContain(`warning: --repo-url ${repo.dir} is a local path`);
    const task = join(pack, "tasks", "tiny-add");
    const spec = parse(readFileSync(join(task, "task.yml"), "utf8"));
    expect(spec.base).toEqual({ git: { repo: repo.dir, ref: repo.base }, overlay: "overlay" });
    expect(existsSync(join(task, "base"))).toBe(false);
    expect(readFileSync(join(task, "overlay", "tests", "test_ops.py"), "utf8")).toBe(TEST_BOTH);
    const none = await cli("eval", "--task", task, "--submission", join(pack, "examples", "submissions", "tiny-add", "base.patch"), "--format", "json");
    expect(JSON.parse(none.out)).toMatchObject({ verdict: "official-failed", official: { counts: { total: 2, failed: 1 } } });
  });

  it("runs the tests with --setup and keeps it as the task's setup:, which a submission cannot shadow", async () => {
    const pack = tmp("pg-import-pack-");
    const setup = join(tmp("pg-setup-"), "setup");
    mkdirSync(setup);
    writeFileSync(join(setup, "pg_fixtures.py"), "import pytest\n\n\n@pytest.fixture\ndef two():\n    return 2\n");
    const r = await imp(pack, repo.withSetup, "--setup", setup, "--pytest-plugin", "pg_fixtures", "--requires-torch", ">=1.0");
    expect(r.err).toMatch(/before the change[\s\S]*1 failed[\s\S]*after the change[\s\S]*1 passed/);
    expect(r.code).toBe(0);
    const task = join(pack, "tasks", "tiny-add");
    const spec = parse(readFileSync(join(task, "task.yml"), "utf8"));
    expect(spec.setup).toEqual({ path: "setup", pytestPlugins: ["pg_fixtures"] });
    expect(spec.requires).toEqual({ torch: ">=1.0" });
    const patch = readFileSync(join(pack, "examples", "submissions", "tiny-add", "reference.patch"), "utf8");
    // A submission that also brings its own pg_fixtures.py (two = 3) is undone: the judge's plugin runs.
    const shadow = join(pack, "shadow.patch");
    writeFileSync(shadow, `${patch}diff --git a/pg_fixtures.py b/pg_fixtures.py\nnew file mode 100644\n--- /dev/null\n+++ b/pg_fixtures.py\n@@ -0,0 +1,6 @@\n+import pytest\n+\n+\n+@pytest.fixture\n+def two():\n+    return 3\n`);
    const res = JSON.parse((await cli("eval", "--task", task, "--submission", shadow, "--format", "json")).out);
    expect(res.official).toMatchObject({ passed: true, counts: { passed: 1 } });
    expect(res.workspaceResets).toEqual([expect.objectContaining({ path: "pg_fixtures.py", action: "removed", why: expect.stringContaining("setup") })]);
  });

  it("leaves out the test ids --exclude names, and says so in import.yml", async () => {
    const pack = tmp("pg-import-pack-");
    const r = await imp(pack, repo.fix, "--exclude", "test_neg");
    expect(r.code).toBe(0);
    const record = parse(readFileSync(join(pack, "tasks", "tiny-add", "import.yml"), "utf8"));
    expect(record).toMatchObject({ fail_to_pass: ["tests/test_ops.py::test_add"], pass_to_pass: [] });
    expect(record.left_out).toEqual([{ id: "tests/test_ops.py::test_neg", why: "excluded (--exclude): deselected, not run" }]);
    const none = await imp(tmp("pg-import-pack-"), repo.fix, "--exclude", "no_such_test");
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/--exclude: no test id collected at head \w+ holds 'no_such_test' \(2 ran, e\.g\. tests\/test_ops\.py::test_neg, tests\/test_ops\.py::test_add\)/);
  });

  it("keeps running the other test files when one cannot be collected before the change", async () => {
    const pack = tmp("pg-import-pack-");
    // Without --trace-imports the snapshot lacks calc/ops.py, which tests/test_ops.py imports: the import says so.
    const pruned = await imp(tmp("pg-import-pack-"), repo.newModule);
    expect(pruned.code).toBe(2);
    expect(pruned.err).toContain(`pytest could not collect a test file at head ${repo.newModule}, so none of its tests ran (collection failure, not a test failure):\n  tests/test_ops.py: ModuleNotFoundError: No module named 'calc.ops'`);
    // The fix is to keep the file, not to narrow --tests.
    expect(pruned.err).toContain("Fix: the snapshot lacks calc/ops.py, which the tests import: add --keep 'calc/ops.py' (or --trace-imports");
    expect(pruned.err).not.toContain("narrow --tests");
    expect(pruned.err).toMatch(/after the change[^\n]*\n\s+2 tests: 1 passed, 0 failed, 1 errors, 0 skipped; 1 file not collected/);
    const r = await imp(pack, repo.newModule, "--trace-imports");
    expect(r.code).toBe(0);
    const record = parse(readFileSync(join(pack, "tasks", "tiny-add", "import.yml"), "utf8"));
    expect(record.fail_to_pass).toEqual(["tests/test_mul.py::test_mul"]);
    expect(record.pass_to_pass).toEqual(["tests/test_ops.py::test_neg", "tests/test_ops.py::test_neg_neg"]);
  });

  it("refuses a SHA the repository lacks, naming it, and writes nothing", async () => {
    const pack = tmp("pg-import-pack-");
    const r = await cli("task", "import", "--repo", repo.dir, "--pr-base", "0123456789abcdef0123456789abcdef01234567", "--pr-head", repo.fix, "--tests", "tests/**", "--out", join(pack, "tasks", "tiny-add"));
    expect(r.code).toBe(2);
    expect(r.err).toContain("--pr-base: commit '0123456789abcdef0123456789abcdef01234567' is not in the repository");
    expect(packFiles(pack)).toEqual([]);
  });

  it("refuses a change whose tests do not fail before it, naming them and the base commit, and writes nothing", async () => {
    const pack = tmp("pg-import-pack-");
    const r = await imp(pack, repo.noFail);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`no test fails before the change: at base ${repo.base}`);
    expect(r.err).toContain("tests/test_ops.py::test_neg_zero");
    expect(packFiles(pack)).toEqual([]);
  });

  it("refuses a change whose tests do not pass after it, naming the test and the head commit, and writes nothing", async () => {
    const pack = tmp("pg-import-pack-");
    const r = await imp(pack, repo.failsAfter);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`1 test(s) do not pass after the change, at head ${repo.failsAfter}:\n  tests/test_ops.py::test_add (failed): assert 6 == 5\n`);
    expect(r.err).toContain("Fix: if it needs what this runner lacks (GPUs, more ranks, a data set), leave it out with --exclude 'test_add' (the excluded ids never run");
    expect(r.err).not.toContain("narrow --tests");
    expect(packFiles(pack)).toEqual([]);
  });

  it("refuses --tests that match nothing the change touches, and an --out that exists", async () => {
    const pack = tmp("pg-import-pack-");
    const r = await cli("task", "import", "--repo", repo.dir, "--pr-base", repo.base, "--pr-head", repo.fix, "--tests", "spec/**", "--out", join(pack, "tasks", "tiny-add"));
    expect(r.code).toBe(2);
    expect(r.err).toContain("--tests: no file the change");
    expect(packFiles(pack)).toEqual([]);
    mkdirSync(join(pack, "tasks", "tiny-add"), { recursive: true });
    const again = await imp(pack, repo.fix);
    expect(again.code).toBe(2);
    expect(again.err).toContain("already exists");
  });
});
