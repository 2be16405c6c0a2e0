/** How one test ended in one run (a test absent from a run's report counts as not passing). */
export type TestOutcome = "passed" | "failed" | "error" | "skipped";

/**
 * The pytest node id of a JUnit testcase: pytest writes classname "pkg.test_mod.TestClass" and
 * name "test_x[param]"; the test file is the one whose dotted path starts the classname.
 */
export function nodeId(tc: { classname: string; name: string }, testFiles: readonly string[]): string {
  const byLength = [...testFiles].sort((a, b) => b.length - a.length);
  // A file that could not be collected: pytest reports it with no classname and the module as name.
  const uncollected = tc.classname === "" ? byLength.find((f) => f.replace(/\.py$/, "").split("/").join(".") === tc.name) : undefined;
  if (uncollected) return uncollected;
  for (const file of byLength) {
    const dotted = file.replace(/\.py$/, "").split("/").join(".");
    if (tc.classname === dotted || tc.classname.startsWith(`${dotted}.`)) {
      const classes = tc.classname.slice(dotted.length).split(".").filter(Boolean);
      return [file, ...classes, tc.name].join("::");
    }
  }
  return [tc.classname.split(".").join("/") + ".py", tc.name].join("::");
}

/** The tests of a change, by what they did before it (base + the PR's tests) and after it (head). */
export interface TestClassification {
  /** Fail (or error) before, pass after: what the change fixes. */
  failToPass: string[];
  /** Pass before and after: what the change must not break. */
  passToPass: string[];
  /** Do not pass after the change (failed, error, or missing from the head's report). */
  failAfter: Array<{ id: string; outcome: TestOutcome | "absent" }>;
  /** Skipped before or after the change: in neither set (the runner may lack what they need). */
  leftOut: Array<{ id: string; why: string }>;
}

/** Sorts every test into fail-to-pass, pass-to-pass, failing after, or left out (skipped). */
export function classifyTests(before: ReadonlyMap<string, TestOutcome>, after: ReadonlyMap<string, TestOutcome>): TestClassification {
  const out: TestClassification = { failToPass: [], passToPass: [], failAfter: [], leftOut: [] };
  // A report entry only before the change (a test it removes, or a file that could not be collected) is in neither set.
  for (const [id, b] of before) if (!after.has(id)) out.leftOut.push({ id, why: `only in the report before the change (${b} there)` });
  for (const id of after.keys()) {
    const a = after.get(id);
    const b = before.get(id);
    if (a === "skipped") out.leftOut.push({ id, why: "skipped after the change" });
    else if (a !== "passed") out.failAfter.push({ id, outcome: a ?? "absent" });
    else if (b === "passed") out.passToPass.push(id);
    else if (b === "skipped") out.leftOut.push({ id, why: "skipped before the change" });
    else out.failToPass.push(id);
  }
  return out;
}
