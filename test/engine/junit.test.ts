import { describe, expect, it } from "vitest";
import { parseJunit } from "../../src/engine/junit.js";
import { officialReason, runsPytest } from "../../src/engine/official-phase.js";

const PYTEST = `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="1" skipped="1" tests="5" time="1.2">
<testcase classname="tests.test_optim" name="test_step" time="0.1"/>
<testcase classname="tests.test_optim" name="test_state" time="0.1"><failure message="AssertionError: assert 1 == 2">def test_state():
&gt;       assert 1 == 2
E       AssertionError

dpopt/optim.py:12: in step
    x()
tests/test_optim.py:31: AssertionError</failure></testcase>
<testcase classname="tests.test_optim.TestCkpt" name="test_load" time="0.1"><error message="collection failure">boom</error></testcase>
<testcase classname="tests.test_optim" name="test_gpu" time="0"><skipped type="pytest.skip" message="no GPU">skip</skipped></testcase>
<testcase classname="tests.test_other" name="test_ok" time="0.1"/>
</testsuite></testsuites>`;

describe("parseJunit", () => {
  it("counts and locates failures in the test file", () => {
    const r = parseJunit(PYTEST);
    expect(r.counts).toEqual({ total: 5, passed: 2, failed: 1, errors: 1, skipped: 1 });
    expect(r.failing[0]).toMatchObject({ name: "test_state", kind: "failure", file: "tests/test_optim.py", line: 31, message: "AssertionError: assert 1 == 2" });
    expect(r.failing[1]).toMatchObject({ name: "test_load", kind: "error", file: "tests/test_optim.py" });
  });

  it("decodes character references in messages: pytest writes a multi-line message attribute with &#10;", () => {
    const r = parseJunit(`<testsuite><testcase classname="tests.test_a" name="test_x"><failure message="AssertionError: line1&#10;  line2 &lt;&amp;&gt; &#x41;&#10;assert 1 == 2">E   &amp;#10; stays literal</failure></testcase></testsuite>`);
    expect(r.failing[0]?.message).toBe("AssertionError: line1\n  line2 <&> A\nassert 1 == 2");
    expect(r.cases[0]).toMatchObject({ outcome: "failed", message: "AssertionError: line1\n  line2 <&> A\nassert 1 == 2", detail: "E   &#10; stays literal" });
  });

  it("reads a bare <testsuite> root", () => {
    expect(parseJunit(`<testsuite tests="1"><testcase classname="a" name="b"/></testsuite>`).counts.total).toBe(1);
  });

  it("throws on what is not a JUnit report", () => {
    expect(() => parseJunit("PASSED PASSED PASSED")).toThrow();
    expect(() => parseJunit("<html><body/></html>")).toThrow(/no <testsuites>/);
    expect(() => parseJunit("<testsuites><testsuite>")).toThrow(/well-formed/);
  });
});

describe("officialReason: exit code and report are cross-checked", () => {
  const report = (over: Partial<{ total: number; passed: number; failed: number; errors: number; skipped: number }>) => ({
    counts: { total: 3, passed: 3, failed: 0, errors: 0, skipped: 0, ...over },
    failing: [],
    suites: ["pytest"],
  });
  it.each([
    ["clean pass", { exitCode: 0, limit: null }, report({}), null],
    ["exit 0 but no report (forged PASSED lines, os._exit(0))", { exitCode: 0, limit: null }, null, /no JUnit report/],
    ["non-zero exit with a clean report", { exitCode: 1, limit: null }, report({}), /exited with code 1 although/],
    ["failures with exit 0", { exitCode: 0, limit: null }, report({ passed: 2, failed: 1 }), /although the run exited 0/],
    ["ordinary failures", { exitCode: 1, limit: null }, report({ passed: 2, failed: 1 }), /1 of 3 tests failed/],
    ["no tests", { exitCode: 0, limit: null }, report({ total: 0, passed: 0 }), /no tests ran/],
    ["all skipped", { exitCode: 0, limit: null }, report({ passed: 0, skipped: 3 }), /every test was skipped/],
    ["limit", { exitCode: null, limit: "wall-clock" }, report({}), /wall-clock limit/],
  ] as const)("%s", (_n, run, rep, want) => {
    const got = officialReason(run, rep, null);
    if (want === null) expect(got).toBeNull();
    else expect(got).toMatch(want);
  });

  it("rejects a report whose suite name is not the one the engine drew for the run (a forged report)", () => {
    const clean = { exitCode: 0, limit: null };
    expect(officialReason(clean, { ...report({}), suites: ["probegate-abc"] }, null, "probegate-abc")).toBeNull();
    expect(officialReason(clean, report({}), null, "probegate-abc")).toMatch(/forged/);
    expect(officialReason(clean, { ...report({}), suites: [] }, null, "probegate-abc")).toMatch(/forged/);
    expect(officialReason(clean, { ...report({}), suites: ["probegate-abc", "other"] }, null, "probegate-abc")).toMatch(/forged/);
  });

  it("names the suites of a report", () => {
    expect(parseJunit(PYTEST).suites).toEqual(["pytest"]);
    expect(parseJunit(`<testsuite name="probegate-1"><testcase classname="a" name="b"/></testsuite>`).suites).toEqual(["probegate-1"]);
  });
});

describe("runsPytest", () => {
  it.each([
    [["/usr/bin/python3", "-m", "pytest", "-q"], true],
    [["pytest", "tests"], true],
    [["/usr/bin/pytest-3"], true],
    [["py.test"], true],
    [["python3", "-m", "unittest"], false],
    [["python3", "tests/pytest_like_runner.py"], false],
  ] as const)("%j → %s", (argv, want) => expect(runsPytest(argv)).toBe(want));
});
