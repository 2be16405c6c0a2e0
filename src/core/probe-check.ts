import { z } from "zod";
import { ID_PATTERN } from "./task-spec.js";

export const CATEGORIES = ["structure", "state", "functional", "memory", "time", "traffic"] as const;
export const CategorySchema = z.enum(CATEGORIES);
export type Category = z.infer<typeof CategorySchema>;

export const CheckStatusSchema = z.enum(["passed", "failed", "error", "skipped"]);
export type CheckStatus = z.infer<typeof CheckStatusSchema>;

/** Where in the submission a flaw is; paths are relative to the submission's root. */
export const LocationSchema = z.strictObject({
  path: z
    .string()
    .min(1)
    .max(1024)
    .refine((p) => !p.startsWith("/") && !p.split("/").includes(".."), "must be relative to the submission, without '..'"),
  line: z.number().int().min(1).optional(),
});
export type Location = z.infer<typeof LocationSchema>;

/** Figures a probe measured: bytes, seconds, ratios, small facts. */
export const MeasuredSchema = z.record(z.string().max(128), z.union([z.number(), z.boolean(), z.string().max(256)]));

/** One line of a probe's `$PROBEGATE_RESULTS` file (docs/task-format.md, "The probe protocol"). */
export const ProbeLineSchema = z.strictObject({
  id: z.string().max(128).regex(ID_PATTERN, "lower-case letters, digits, '.', '_' and '-'"),
  category: CategorySchema,
  status: CheckStatusSchema,
  message: z.string().max(4000).default(""),
  location: LocationSchema.nullish(),
  measured: MeasuredSchema.nullish(),
  /** Ids of the task's requirements (task.yml `requirements`) this check covers. */
  requirements: z.array(z.string().max(128).regex(ID_PATTERN, "lower-case letters, digits, '.', '_' and '-'")).max(64).optional(),
});
export type ProbeLine = z.infer<typeof ProbeLineSchema>;
