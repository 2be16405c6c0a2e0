import { describe, expect, it } from "vitest";
import { PER_KIND, compareGateRuns } from "../../../src/core/test-outcomes.js";
import { allowedChange, nodeIdOf, testCheckId, type TestOutcome } from "../../../src/core/test-ids.js";
import { pytestFailureCause } from "../../../src/core/pytest-failure.js";
import { ProbeLineSchema } from "../../../src/core/probe-check.js";

const t = (name: string, outcome: TestOutcome["outcome"], message?: string, classname = "tests.test_ops"): TestOutcome => ({ classname, name, outcome, message });
const FILES = ["tests/test_ops.py"];

describe("test ids", () => {
  it("names a JUnit case by its pytest node id, from the known files or the class-name parts", () => {
    expect(nodeIdOf({ classname: "tests.test_ops", name: "test_add[1-2]" }, FILES)).toBe("tests/test_ops.py::test_add[1-2]");
    expect(nodeIdOf({ classname: "tests.test_ops.TestAdd", name: "test_neg" }, FILES)).toBe("tests/test_ops.py::TestAdd::test_neg");
    expect(nodeIdOf({ classname: "tests.unit.test_x.TestY", name: "test_z" })).toBe("tests/unit/test_x.py::TestY::test_z");
    expect(nodeIdOf({ classname: "", name: "tests.test_broken" })).toBe("tests/test_broken.py");
  });

  it("makes stable check ids within the id pattern, kept apart where their slugs meet", () => {
    const a = testCheckId("base-tests.failed-on-head", "tests/test_ops.py::test_add[A]");
    const b = testCheckId("base-tests.failed-on-head", "tests/test_ops.py::test_add[a]");
    expect(a).not.toBe(b);
    expect(a).toBe(testCheckId("base-tests.failed-on-head", "tests/test_ops.py::test_add[A]"));
    const long = testCheckId("weakened-tests.skipped-at-run", `tests/test_ops.py::test_${"x".repeat(300)}`);
    for (const id of [a, b, long]) expect(ProbeLineSchema.shape.id.safeParse(id).success, id).toBe(true);
    expect(a.startsWith("base-tests.failed-on-head.test_ops.py-test_add-a-")).toBe(true);
  });

  it("reads official.allowChanged as the guard does: node id, bare id, globs, kind:id", () => {
    const id = "tests/test_ops.py::test_add[1-2]";
    expect(allowedChange(id, "failed-on-head", [id])).toBe(true);
    expect(allowedChange(id, "failed-on-head", ["tests/test_ops.py::test_add"])).toBe(true);
    expect(allowedChange(id, "failed-on-head", ["tests/*.py"])).toBe(true);
    expect(allowedChange(id, "failed-on-head", ["failed-on-head:tests/test_ops.py::test_add"])).toBe(true);
    expect(allowedChange(id, "failed-on-head", ["skipped:tests/test_ops.py::test_add", "tests/other.py"])).toBe(false);
  });
});

describe("compareGateRuns: the base's outcomes judge the head test by test", () => {
  it("finds nothing where every base test passes on both, and says so in numbers", () => {
    const all = [t("test_a", "passed"), t("test_b", "passed")];
    const c = compareGateRuns({ base: all, head: all, baseOnHead: all, files: FILES, allow: [] });
    expect(c.checks.map((x) => [x.id, x.status])).toEqual([["base-tests", "passed"]]);
    expect(c.counts).toEqual({ basePassed: 2, headKept: 2, baseOnHeadKept: 2, failingAtBase: 0 });
  });

  it("reports skips (importorskip, xfail, a reason), tests gone, and failures against the head's code, each once", () => {
    const base = [t("test_a", "passed"), t("test_b", "passed"), t("test_c", "passed"), t("test_d", "passed")];
    const head = [t("test_a", "skipped", "could not import 'foo': No module named 'foo'"), t("test_b", "skipped", "xfail: flaky"), t("test_c", "failed", "boom")];
    const onHead = [t("test_a", "failed", "assert 1 == 2\nmore"), t("test_b", "passed"), t("test_c", "failed", "boom"), t("test_d", "passed")];
    const c = compareGateRuns({ base, head, baseOnHead: onHead, files: FILES, allow: [] });
    const msgs = Object.fromEntries(c.checks.filter((x) => x.status === "failed").map((x) => [x.id.replace(/-[0-9a-f]{8}$/, ""), x.message]));
    expect(msgs["weakened-tests.skipped-at-run.test_ops.py-test_a"]).toMatch(/skipped by importorskip: could not import 'foo'/);
    expect(msgs["weakened-tests.skipped-at-run.test_ops.py-test_b"]).toMatch(/marked xfail \(flaky\)/);
    expect(msgs["weakened-tests.not-collected.test_ops.py-test_d"]).toMatch(/still collect it and it passes against the head's code/);
    expect(msgs["base-tests.failed-on-head.test_ops.py-test_a"]).toMatch(/fails against the head's code: assert 1 == 2$/);
    expect(msgs["base-tests.failed-on-head.test_ops.py-test_c"]).toMatch(/boom/);
    expect(Object.keys(msgs)).toHaveLength(5);
  });

  it("keeps a test moved to another file or class, and tolerates what fails at the base too", () => {
    const base = [t("test_a", "passed", undefined, "tests.test_old"), t("test_bad", "failed", "always")];
    const head = [t("test_a", "passed", undefined, "tests.test_new"), t("test_bad", "failed", "always"), t("test_new_bad", "failed", "new")];
    const c = compareGateRuns({ base, head, baseOnHead: base, files: ["tests/test_old.py", "tests/test_new.py", ...FILES], allow: [] });
    expect(c.checks.filter((x) => x.status === "failed")).toEqual([]);
    expect(c.failingAtBase.map((f) => f.nodeId)).toEqual(["tests/test_ops.py::test_bad"]);
  });

  it("reports a change the task allows as passed, and folds findings past PER_KIND into one", () => {
    const n = PER_KIND + 5;
    const base = Array.from({ length: n }, (_, i) => t(`test_${i}`, "passed"));
    const head = base.map((x) => ({ ...x, outcome: "skipped" as const }));
    const c = compareGateRuns({ base, head, baseOnHead: base, files: FILES, allow: ["tests/test_ops.py::test_0"] });
    const failed = c.checks.filter((x) => x.status === "failed");
    expect(failed).toHaveLength(PER_KIND + 1);
    expect(failed.at(-1)).toMatchObject({ id: "weakened-tests.skipped-at-run.more", measured: { count: 4 } });
    expect(c.checks.find((x) => x.id.startsWith("weakened-tests.skipped-at-run.allowed."))?.message).toMatch(/^allowed by the task/);
  });
});

describe("pytestFailureCause quotes the import error that stopped a run", () => {
  it("from a conftest that cannot load, with the path inside the tree", () => {
    const log = "ImportError while loading conftest '/tmp/ev/base-run/tests/conftest.py'.\ntests/conftest.py:1: in <module>\n    import yaml\nE   ModuleNotFoundError: No module named 'yaml'\n";
    expect(pytestFailureCause({ log, strip: ["/tmp/ev/base-run"] })).toBe("ModuleNotFoundError: No module named 'yaml' (loading tests/conftest.py)");
  });

  it("from the report's collection errors first", () => {
    const detail = "tests/test_x.py:3: in <module>\n    from calc.gone import f\nE   ImportError: cannot import name 'f' from 'calc.gone'";
    expect(pytestFailureCause({ log: "", collectionErrors: [{ name: "tests.test_x", detail, message: "collection failure" }] })).toBe("ImportError: cannot import name 'f' from 'calc.gone' (collecting tests.test_x)");
    expect(pytestFailureCause({ log: "nothing useful here\n" })).toBeNull();
  });
});
