import { z } from "zod";

/**
 * One parameter a task's probes draw fresh per evaluation, so a submission tuned to the sizes the
 * examples or the prompt happen to use is still exercised elsewhere in the stated range.
 */
export const ProbeParamSchema = z.union([
  z.strictObject({ int: z.tuple([z.number().int(), z.number().int()]).describe("[min, max], both included") }),
  z.strictObject({ float: z.tuple([z.number(), z.number()]).describe("[min, max)") }),
  z.strictObject({ choice: z.array(z.union([z.string(), z.number(), z.boolean()])).min(1).describe("one of these values") }),
]);
export type ProbeParam = z.infer<typeof ProbeParamSchema>;

export const ProbeParamsSchema = z
  .record(z.string().regex(/^[a-z][a-z0-9_]*$/, "parameter names are lower-case identifiers (a-z, 0-9, _)"), ProbeParamSchema)
  .superRefine((params, ctx) => {
    for (const [name, p] of Object.entries(params)) {
      if ("int" in p && p.int[0] > p.int[1]) ctx.addIssue({ code: "custom", path: [name, "int"], message: `min ${p.int[0]} is above max ${p.int[1]}` });
      if ("float" in p && !(p.float[0] < p.float[1])) ctx.addIssue({ code: "custom", path: [name, "float"], message: `min ${p.float[0]} is not below max ${p.float[1]}` });
    }
  });
export type ProbeParams = z.infer<typeof ProbeParamsSchema>;

/** What an evaluation's probes were handed: the seed (recorded, so `--seed` reproduces it) and the values. */
export const DrawnParamsSchema = z.strictObject({
  seed: z.number().int().min(0).max(0xffffffff),
  values: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
});
export type DrawnParams = z.infer<typeof DrawnParamsSchema>;

/** mulberry32: a small, well-mixed 32-bit PRNG; the same seed gives the same stream on every machine. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Draws every parameter from `seed`, in name order so adding a parameter never reshuffles the
 * others' stream position silently across names sorted before it. Pure.
 */
export function drawParams(params: ProbeParams, seed: number): DrawnParams {
  const next = prng(seed);
  const values: DrawnParams["values"] = {};
  for (const name of Object.keys(params).sort()) {
    const p = params[name] as ProbeParam;
    const u = next();
    if ("int" in p) values[name] = p.int[0] + Math.floor(u * (p.int[1] - p.int[0] + 1));
    else if ("float" in p) values[name] = p.float[0] + u * (p.float[1] - p.float[0]);
    else values[name] = p.choice[Math.floor(u * p.choice.length)] as string | number | boolean;
  }
  return { seed: seed >>> 0, values };
}
