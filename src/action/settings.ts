import { z } from "zod";
import { FAIL_ON } from "../core/gate.js";
import { parseWorkflowRef } from "./trusted-workflow.js";

const optional = z
  .string()
  .transform((s) => s.trim())
  .transform((s) => (s === "" ? undefined : s));

/** The Action's inputs, parsed once into a typed object (action.yml documents each). */
export const ActionSettingsSchema = z
  .object({
    mode: z.enum(["runner", "standalone"], { error: (i) => `expected 'runner' or 'standalone', got '${String(i.input)}'` }),
    task: z.string().trim().min(1, "is required: the task folder holding task.yml"),
    submission: optional,
    probes: optional,
    "signing-key": optional,
    "fail-on": z.enum(FAIL_ON, { error: (i) => `expected one of ${FAIL_ON.join(", ")}, got '${String(i.input)}'` }),
    "github-token": optional,
    "check-name": z.string().trim().min(1),
    "result-path": optional,
    "evaluation-key": optional,
    "base-sha": optional.refine((v) => v === undefined || /^[0-9a-f]{7,64}$/i.test(v), "expected the PR's base commit SHA (hex)"),
    python: optional,
    "world-size": z
      .string()
      .trim()
      .regex(/^(\d*)$/, "expected a whole number of ranks")
      .transform((s) => (s ? Number(s) : undefined))
      .refine((n) => n === undefined || n >= 1, "expected at least 1 rank"),
    gpus: z.string().trim().regex(/^(all|none|\d+(,\d+)*)$/, "expected all, none, or GPU indices like 0,1"),
    "remove-probes": z.enum(["true", "false"], { error: () => "expected true or false" }).transform((v) => v === "true"),
    // Empty (an older workflow that does not pass it) is the default: sandboxed.
    unsandboxed: z.enum(["true", "false", ""], { error: () => "expected true or false" }).transform((v) => v === "true"),
    "trusted-workflow": optional.refine((v) => v === undefined || parseWorkflowRef(v) !== null, "expected owner/repo/.github/workflows/file.yml@ref"),
  })
  .superRefine((s, ctx) => {
    if (s.mode === "runner" && !s["signing-key"]) {
      ctx.addIssue({ code: "custom", path: ["signing-key"], message: "is required in runner mode: the app trusts only signed results (pass it from a secret)" });
    }
    if (s.mode === "runner" && !s.submission) {
      ctx.addIssue({ code: "custom", path: ["submission"], message: "is required in runner mode: the checked-out submission folder, or repo@sha" });
    }
    if (s.mode === "standalone" && !s["trusted-workflow"]) {
      ctx.addIssue({
        code: "custom",
        path: ["trusted-workflow"],
        message:
          "is required in standalone mode: the workflow allowed to read the probes and sign, as owner/repo/.github/workflows/file.yml@ref (a pull_request workflow runs the file from the PR, which its author can edit)",
      });
    }
    if (s.mode === "standalone" && !s["github-token"]) {
      ctx.addIssue({ code: "custom", path: ["github-token"], message: "is required in standalone mode to post the check run (the default is the job's token)" });
    }
  });

export type ActionSettings = z.infer<typeof ActionSettingsSchema>;
export const INPUT_NAMES = Object.keys(ActionSettingsSchema.shape) as Array<keyof typeof ActionSettingsSchema.shape>;

/** Reads every input through `get` (core.getInput) and validates; errors name the input. */
export function readSettings(get: (name: string) => string): ActionSettings {
  const raw = Object.fromEntries(INPUT_NAMES.map((n) => [n, get(n)]));
  const parsed = ActionSettingsSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((i) => `Input '${String(i.path[0] ?? "?")}' ${i.message.startsWith("is ") ? i.message : `is invalid: ${i.message}`}`);
  throw new SettingsError(lines.join("\n"));
}

export class SettingsError extends Error {
  override readonly name = "SettingsError";
}
