import { z } from "zod";
import { CategorySchema } from "./probe-check.js";
import type { EvaluationResult } from "./result.js";
import { VerdictSchema } from "./result.js";

/** One entry of `examples/submissions/<task>/expected.yml`: what an example must be judged. */
export const ExpectationSchema = z.strictObject({
  submission: z.string().min(1),
  verdict: VerdictSchema,
  failedCategories: z.array(CategorySchema).default([]),
  why: z.string().optional(),
  /** In the quick set that `probegate demo` evaluates by default (`--all` evaluates every example). */
  quick: z.boolean().default(false),
});
export const ExpectationsSchema = z.array(ExpectationSchema).min(1);
export type Expectation = z.infer<typeof ExpectationSchema>;

/** The categories of the checks that failed, sorted and unique. */
export function failedCategories(result: EvaluationResult): string[] {
  return [...new Set(result.probes.filter((p) => p.status === "failed").map((p) => p.category))].sort();
}

/** Empty when the result is what the example promises; else what differs. */
export function compareToExpectation(result: EvaluationResult, want: Pick<Expectation, "verdict" | "failedCategories">): string[] {
  const diffs: string[] = [];
  if (result.verdict !== want.verdict) diffs.push(`verdict ${result.verdict}, expected ${want.verdict}`);
  const got = failedCategories(result);
  const expected = [...new Set(want.failedCategories)].sort();
  if (want.verdict === "probe-rejected" && got.join(",") !== expected.join(",")) {
    diffs.push(`failed categories [${got.join(", ")}], expected [${expected.join(", ")}]`);
  }
  return diffs;
}
