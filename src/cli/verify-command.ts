import { readFileSync } from "node:fs";
import { EvaluationResultSchema } from "../core/result.js";
import { InputError } from "../engine/errors.js";
import { verifyResult } from "../engine/sign.js";

/** `probegate verify <result.json>`: schema and signature, with the key from $PROBEGATE_SIGNING_KEY. */
export function verifyCommand(file: string, io: { stdout: (s: string) => void; stderr: (s: string) => void }): number {
  const key = process.env.PROBEGATE_SIGNING_KEY;
  if (!key) throw new InputError("PROBEGATE_SIGNING_KEY is not set: the key the result was signed with is needed to verify it.", { field: "PROBEGATE_SIGNING_KEY" });
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new InputError(`${file}: not a readable JSON file (${(e as Error).message}).`, { file });
  }
  const parsed = EvaluationResultSchema.safeParse(data);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    io.stderr(`✗ ${file}: not a valid result: ${first?.path.join(".") || "(document)"}: ${first?.message}\n`);
    return 1;
  }
  const v = verifyResult(parsed.data, key);
  if (!v.ok) {
    io.stderr(`✗ ${file}: ${v.why}\n`);
    return 1;
  }
  io.stdout(`✓ ${file}: valid result, signature verified (${parsed.data.task.id}: ${parsed.data.verdict})\n`);
  return 0;
}
