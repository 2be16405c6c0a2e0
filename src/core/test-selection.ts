import picomatch from "picomatch";
import type { TestSelection } from "./task-spec.js";

/** The tests a repository gate runs for one PR, and why each was chosen. */
export interface SelectedTests {
  tests: string[];
  /** For each test: "always" or the changed path that mapped to it. */
  why: Record<string, string>;
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
  return { tests, why };
}

/** Replaces a lone `{tests}` argument by the selected tests (one argument each). */
export function expandTests(argv: readonly string[], tests: readonly string[]): string[] {
  return argv.flatMap((a) => (a === "{tests}" ? [...tests] : [a]));
}
