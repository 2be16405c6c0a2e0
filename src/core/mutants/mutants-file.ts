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

/** A task folder's `mutants.yml`: the probe-score threshold and the equivalent mutants. */
export const MutantsFileSchema = z.strictObject({
  threshold: z.number().min(0).max(1).default(0.9).describe("validate --mutants fails when probeScore is under it"),
  equivalent: z.array(EquivalentMarkSchema).default([]).describe("mutants that cannot be told apart from the reference by anything the prompt states"),
});
export type MutantsFile = z.infer<typeof MutantsFileSchema>;

/** What a task without mutants.yml gets. */
export const DEFAULT_MUTANTS_FILE: MutantsFile = { threshold: 0.9, equivalent: [] };
