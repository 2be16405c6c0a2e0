import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { AppConfigSchema } from "../core/app-config.js";
import { EvaluationResultSchema } from "../core/result.js";
import { MutantsFileSchema } from "../core/mutants/mutants-file.js";
import { ProbeLineSchema } from "../core/probe-check.js";
import { TaskSpecSchema } from "../core/task-spec.js";

/** The JSON Schemas published for editors and for other implementations, generated from zod. */
export function jsonSchemas(): Record<string, unknown> {
  const gen = (schema: z.ZodType, id: string, io: "input" | "output") => ({
    $id: `https://probegate.dev/schema/${id}`,
    ...z.toJSONSchema(schema, { io, unrepresentable: "any" }),
  });
  return {
    "task.schema.json": gen(TaskSpecSchema, "task.schema.json", "input"),
    "result.schema.json": gen(EvaluationResultSchema, "result.schema.json", "output"),
    "probe-line.schema.json": gen(ProbeLineSchema, "probe-line.schema.json", "input"),
    "app-config.schema.json": gen(AppConfigSchema, "app-config.schema.json", "input"),
    "mutants.schema.json": gen(MutantsFileSchema, "mutants.schema.json", "input"),
  };
}

/** `probegate schema <dir>`: writes the JSON Schemas (npm run build keeps schema/ current). */
export function schemaCommand(dir: string): number {
  mkdirSync(dir, { recursive: true });
  for (const [name, schema] of Object.entries(jsonSchemas())) writeFileSync(join(dir, name), `${JSON.stringify(schema, null, 2)}\n`);
  return 0;
}
