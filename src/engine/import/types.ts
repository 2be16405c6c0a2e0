import type { TestClassification } from "../../core/test-split.js";

/** What `probegate task import` was asked to import. */
export interface PrImportRequest {
  /** A git directory (bare or not) or a URL git can clone. */
  repo: string;
  base: string;
  head: string;
  /** Globs (or paths) of the change's test files, relative to the repository root. */
  tests: string[];
  /** More paths of the base to keep in a pruned snapshot (globs). */
  keep: string[];
  /** Add the base files the kept Python files import (a static trace; nothing is run for it). */
  traceImports: boolean;
  python?: string;
  /** Judge-owned files beside the tree while the tests run (as the task's `setup:` will give them). */
  setupDir?: string;
  pytestPlugins: string[];
  timeoutS: number;
  worldSize: number;
  /** Test ids holding any of these strings are deselected: never run, listed as left out. */
  exclude: string[];
  /** Run the tests in the pruned snapshot (what a snapshot task will run in), not the whole tree. */
  prune: boolean;
  /**
   * The change need not make any test pass (a performance PR adds none): the official set is then
   * the pass-to-pass tests, the files of the head that --tests names when the change touches none,
   * and the hidden probes carry the requirement.
   */
  passToPassOnly: boolean;
}

/** Everything a task folder is made from; nothing is written to the user's folders here. */
export interface PrImport {
  baseSha: string;
  headSha: string;
  subject: string;
  message: string;
  /** The repository's pull request template at the head, if it has one (to drop from the message). */
  prTemplate: string | null;
  tests: string[];
  /** Whether the change touches the test files (false: a pass-to-pass-only import of existing tests). */
  testsChanged: boolean;
  sources: string[];
  /** The change to the source files: the reference submission. */
  referencePatch: string;
  /** Paths of the base kept in the snapshot (the head's version for test files). */
  snapshot: string[];
  /** Files in the whole base tree (a snapshot keeps `snapshot.length` of them). */
  baseFileCount: number;
  classification: TestClassification;
  /** Where the trees were exported, to copy the snapshot from; removed by dispose(). */
  baseTree: string;
  headTree: string;
  dispose(): void;
}

/** The pytest command the task will run: the fail-to-pass and pass-to-pass ids, nothing else. */
export function officialCommand(ids: readonly string[]): string[] {
  return ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml={junit}", ...ids];
}
