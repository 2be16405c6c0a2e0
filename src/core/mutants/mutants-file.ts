import { z } from "zod";

/**
 * A mutant's stable id: operator, file, line and which of that operator's mutations on that line
 * (`core/ReplaceComparisonOperator_Gt_GtE@pkg/mod.py:12#0`). It does not move when other lines of
 * the file change, so a mark in mutants.yml keeps naming the same mutant.
 */
export function mutantId(m: { operator: string; path: string; line: number; occurrence: number }): string {
  return `${m.operator}@${m.path}:${m.line}#${m.occurrence}`;
}

const MUTANT_ID = /^[\w.-]+\/[\w.-]+@[^:\s]+:\d+#\d+$/;

/** One equivalent mutant: its id and why nothing the prompt states tells it from the reference. */
export const EquivalentMarkSchema = z.strictObject({
  id: z.string().regex(MUTANT_ID, "a mutant id: operator@path:line#occurrence, as validate --mutants prints it"),
  reason: z.string().trim().min(1, "say why nothing the prompt states tells this mutant from the reference"),
});
export type EquivalentMark = z.infer<typeof EquivalentMarkSchema>;

/**
 * What a repository gate's mutants are made of: it has no reference change, so the gated
 * subsystem's own files at a pinned upstream commit are mutated, each mutant a commit on top of it
 * evaluated as a PR against it.
 */
export const UpstreamSchema = z.strictObject({
  repo: z.string().min(1).optional().describe("the repository (a path, relative to the task folder, or a git URL); --repo overrides it"),
  commit: z.string({ error: (i) => (typeof i.input === "number" ? "YAML read the commit id as a number: quote it ('…')" : "a full 40-hex commit id") }).regex(/^[0-9a-f]{40}$/, "a full 40-hex commit id of the repository, pinned so the mutants never move").describe("the pinned upstream commit the mutants change"),
  paths: z.array(z.string().regex(/^[^/].*\.py$/, "a Python file of the repository, relative to its root")).min(1).describe("the gated subsystem's files whose lines are mutated"),
  functions: z.array(z.string().regex(/^[A-Za-z_][\w.]*$/, "a function name, or Class.method")).optional().describe("only the lines of these functions (every line of the paths when left out)"),
  operators: z.array(z.string().regex(/^[\w.-]+\/[\w.-]+$/, "an operator as the report names it, e.g. probegate/ElementLoop")).min(1).optional().describe("only these operators (a run aimed at the time and memory checks); every gate operator when left out"),
});
export type Upstream = z.infer<typeof UpstreamSchema>;

/** A task folder's `mutants.yml`: the probe-score threshold and the equivalent mutants. */
export const MutantsFileSchema = z.strictObject({
  threshold: z.number().min(0).max(1).default(0.9).describe("validate --mutants fails when probeScore is under it"),
  upstream: UpstreamSchema.optional().describe("a repository gate's: the upstream commit and files its mutants change"),
  equivalent: z.array(EquivalentMarkSchema).default([]).describe("mutants that cannot be told apart from the reference by anything the prompt states"),
});
export type MutantsFile = z.infer<typeof MutantsFileSchema>;

/** What a task without mutants.yml gets. */
export const DEFAULT_MUTANTS_FILE: MutantsFile = { threshold: 0.9, equivalent: [] };
