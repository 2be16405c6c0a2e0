import type { Category } from "../probe-check.js";
import type { EvaluationResult, Verdict } from "../result.js";
import type { Expectation } from "../demo-expectation.js";

/** One example submission of a task and every evaluation of it (a correct one may run N times). */
export interface PowerColumnInput {
  /** The example's file name, as expected.yml names it. */
  submission: string;
  expectation: Expectation;
  results: ReadonlyArray<EvaluationResult>;
}

/** A column of the matrix: one example submission, what it should be and what it was. */
export interface PowerColumn {
  submission: string;
  /** Expected `resolved`: the reference or an alternative-correct design. */
  correct: boolean;
  expected: { verdict: Verdict; failedCategories: Category[]; why?: string };
  runs: number;
  verdicts: Partial<Record<Verdict, number>>;
  /** Why the first run with another verdict than the expected one got it (whyNot), where one did. */
  unexpected?: string;
}

/** How one check did on one column: counts over that column's runs (absent: the check did not report). */
export interface PowerCell {
  passed: number;
  failed: number;
  error: number;
  skipped: number;
  absent: number;
}

/** A row of the matrix: one check of one probe file. */
export interface PowerRow {
  probe: string;
  check: string;
  category: Category;
  requirements: string[];
  cells: PowerCell[];
}

/** Something validation found; `error` fails it, `warning` is reported only. */
export interface PowerFinding {
  level: "error" | "warning";
  kind: "probe-catches-nothing" | "check-catches-nothing" | "fails-correct" | "flaw-not-caught" | "unexpected-verdict" | "not-evaluated" | "interrupted" | "requirement-unchecked" | "requirement-undeclared";
  /** The probe file, check id, submission or requirement it is about. */
  subject: string;
  message: string;
}

/** False rejections of one correct submission over its runs. */
export interface FalseRejections {
  submission: string;
  runs: number;
  rejected: number;
  /** Per check id: in how many runs it failed or errored. */
  byCheck: Record<string, number>;
}

/**
 * What a power run evaluated: `all` the examples (the probes' power and their false rejections), or
 * `correct-only` — only the correct ones, for more runs of them after a full run: false rejections
 * only, nothing about what the probes catch.
 */
export type PowerScope = "all" | "correct-only";

/** The power report of one task: the probes × submissions matrix and what it shows. */
export interface PowerReport {
  task: string;
  scope: PowerScope;
  probeSet: string | null;
  /** The requirement ids task.yml declares: what requirement coverage was judged against. */
  requirements: string[];
  columns: PowerColumn[];
  rows: PowerRow[];
  falseRejections: FalseRejections[];
  findings: PowerFinding[];
  ok: boolean;
}

/** A power run stopped by a signal: the evaluations it abandoned mid-way and those it never started. */
export interface PowerInterruption {
  signal: string;
  abandoned: number;
  notStarted: number;
}

