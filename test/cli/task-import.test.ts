import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { tmp } from "../helpers.js";
import { cli } from "./run-cli.js";

const OPS_BROKEN = "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n";
const OPS_FIXED = "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n";
const TEST_NEG = "from calc.ops import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n";
const TEST_BOTH = `from calc.ops import add, neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n\n\ndef test_add():\n    assert add(2, 3) == 5\n`;

/** A small repository: base, a good fix, and three bad changes branching from it. */
function makeRepo(): { dir: string; base: string; fix: string; noFail: string; failsAfter: string; withSetup: string; newModule: string } {
  const dir = tmp("pg-import-repo-");
  const g = (...args: string[]) => execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: dir, encoding: "utf8" }).trim();
  const put = (path: string, text: string) => {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  const commit = (msg: string) => {
    g("add", "-A");
    g("commit", "-q", "-m", msg);
    return g("rev-parse", "HEAD");
  };
  g("init", "-q", "-b", "main");
  put("calc/__init__.py", "");
  put("calc/ops.py", OPS_BROKEN);
  put("calc/unused.py", "X = 1\n");
  put("tests/test_ops.py", TEST_NEG);
  put("LICENSE", "MIT\n");
  const base = commit("base");
  put("calc/ops.py", OPS_FIXED);
  put("tests/test_ops.py", TEST_BOTH);
  const fix = commit("Fix add\n\nadd subtracted its arguments.");
  // A refactor whose new test already passes before it: no fail-to-pass test.
  g("checkout", "-q", base);
  put("calc/ops.py", `${OPS_BROKEN}\n\ndef double(a):\n    return 2 * a\n`);
  put("tests/test_ops.py", `${TEST_NEG}\n\ndef test_neg_zero():\n    assert neg(0) == 0\n`);
  const noFail = commit("Add double");
  // A change whose test still fails after it.
  g("checkout", "-q", base);
  put("calc/ops.py", "def add(a, b):\n    return a * b\n\n\ndef neg(a):\n    return -a\n");
  put("tests/test_ops.py", TEST_BOTH);
  const failsAfter = commit("Break add differently");
  // A change whose tests need a fixture the task's setup plugin provides.
  g("checkout", "-q", base);
  put("calc/ops.py", OPS_FIXED);
  put("tests/test_ops.py", `from calc.ops import add\n\n\ndef test_add_two(two):\n    assert add(two, two) == 4\n`);
  const withSetup = commit("Fix add (tested with a fixture from the runner's plugin)");
  // A new module with its new test file (which cannot even be collected before the change), and an edit to the old test.
  g("checkout", "-q", base);
  put("calc/mul.py", "def mul(a, b):\n    return a * b\n");
  put("tests/test_mul.py", "from calc.mul import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n");
  put("tests/test_ops.py", `${TEST_NEG}\n\ndef test_neg_neg():\n    assert neg(neg(3)) == 3\n`);
  const newModule = commit("Add mul");
  g("checkout", "-q", "main");
  return { dir, base, fix, noFail, failsAfter, withSetup, newModule };
}

/** Files under a pack, so a test can say nothing was written. */
function packFiles(pack: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) (e.isDirectory() ? walk : (p: string) => out.push(p))(join(d, e.name));
  };
  walk(pack);
  return out.sort();
}

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

    // validate holds the skeletons to the rules until the author finishes them.
    const v = await cli("validate", task);
    expect(v.code).toBe(2);
    expect(v.err).toMatch(/prompt\.md: still the skeleton[\s\S]*probe_functional\.py: still the probe skeleton/);

    const ref = await cli("eval", "--task", task, "--submission", join(examples, "reference.patch"), "--format", "json");
    const refResult = JSON.parse(ref.out);
    expect(refResult.official).toMatchObject({ passed: true, counts: { total: 2, passed: 2 } });
    expect(refResult.verdict).toBe("error"); // the probe skeleton reports error until written: never a pass
    const none = await cli("eval", "--task", task, "--submission", join(examples, "base.patch"), "--format", "json");
    expect(JSON.parse(none.out)).toMatchObject({ verdict: "official-failed", official: { counts: { passed: 1, failed: 1 } } });
  });

  it("records the base as a git ref with the PR's tests as overlay, which the engine exports", async () => {
    const pack = tmp("pg-import-pack-");
    const r = await imp(pack, repo.fix, "--base-as", "git");
    expect(r.code).toBe(0);
    const task = join(pack, "tasks", "tiny-add");
    const spec = parse(readFileSync(join(task, "task.yml"), "utf8"));
    expect(spec.base).toEqual({ git: { repo: expect.stringMatching(/pg-import-repo-/), ref: repo.base }, overlay: "overlay" });
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
    expect(record.left_out).toEqual([{ id: "tests/test_ops.py::test_neg", why: "excluded (--exclude): passed after the change" }]);
    const none = await imp(tmp("pg-import-pack-"), repo.fix, "--exclude", "no_such_test");
    expect(none.code).toBe(2);
    expect(none.err).toContain("--exclude: no test id holds 'no_such_test'");
  });

  it("keeps running the other test files when one cannot be collected before the change", async () => {
    const pack = tmp("pg-import-pack-");
    // Without --trace-imports the snapshot lacks calc/ops.py, which tests/test_ops.py imports: the import says so.
    const pruned = await imp(tmp("pg-import-pack-"), repo.newModule);
    expect(pruned.code).toBe(2);
    expect(pruned.err).toContain("do not pass after the change, at head");
    expect(pruned.err).toContain("tests/test_ops.py (error)");
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
    expect(r.err).toContain(`do not pass after the change, at head ${repo.failsAfter}: tests/test_ops.py::test_add (failed)`);
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
