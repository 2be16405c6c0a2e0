import picomatch from "picomatch";
import type { TestSelection } from "./task-spec.js";

/** The tests a repository gate runs for one PR, and why each was chosen. */
export interface SelectedTests {
  tests: string[];
  /** For each test: "always" or the changed path that mapped to it. */
  why: Record<string, string>;
  /** Selected tests whose file the head does not have (the PR deleted or renamed it), left out of the run. */
  gone: string[];
}

/**
 * Chooses the repository's tests for the paths a PR changed: the fixed list, then every
 * `fromPaths` entry one of whose globs matches a changed path (a '!' glob excludes), each test once
 * and in the order the task lists them. Pure.
 */
export function selectTests(select: TestSelection, changedPaths: readonly string[]): SelectedTests {
  const tests: string[] = [];
  const why: Record<string, string> = {};
  const add = (t: string, reason: string) => {
    if (t in why) return;
    tests.push(t);
    why[t] = reason;
  };
  for (const t of select.tests) add(t, "always");
  for (const entry of select.fromPaths) {
    const include = entry.paths.filter((g) => !g.startsWith("!"));
    const exclude = entry.paths.filter((g) => g.startsWith("!")).map((g) => g.slice(1));
    const inc = picomatch(include, { dot: true });
    const exc = exclude.length ? picomatch(exclude, { dot: true }) : () => false;
    const hit = changedPaths.find((p) => inc(p) && !exc(p));
    if (hit !== undefined) for (const t of entry.tests) add(t, `changed ${hit}`);
  }
  return { tests, why, gone: [] };
}

/**
 * Leaves out the selected tests whose file (the part before `::`) is not in the head's tree: a PR
 * that renames `test_a.py` to `test_b.py` still maps its changed paths to `test_a.py`, and pytest
 * would stop with a usage error on the missing file. Whether the removal weakened the tests is the
 * guard's to say (it compares every watched base test with the head's). Pure: `exists` asks the tree.
 */
export function dropMissing(selected: SelectedTests, exists: (path: string) => boolean): SelectedTests {
  const keep = selected.tests.filter((t) => exists(t.split("::")[0] ?? t));
  const gone = selected.tests.filter((t) => !keep.includes(t));
  return { tests: keep, why: selected.why, gone: [...selected.gone, ...gone] };
}

/** Replaces a lone `{tests}` argument by the selected tests (one argument each). */
export function expandTests(argv: readonly string[], tests: readonly string[]): string[] {
  return argv.flatMap((a) => (a === "{tests}" ? [...tests] : [a]));
}
