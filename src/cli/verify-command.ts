import { readFileSync } from "node:fs";
import { readResult, type EvaluationResult } from "../core/result.js";
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
  const read = readResult(data);
  if (!read.ok) {
    io.stderr(`✗ ${file}: not a valid result: ${read.problem}\n`);
    return 1;
  }
  // Over the document as written: fields a newer probegate added are signed too.
  const v = verifyResult(data as EvaluationResult, key);
  if (!v.ok) {
    io.stderr(`✗ ${file}: ${v.why}\n`);
    return 1;
  }
  io.stdout(`✓ ${file}: valid result, signature verified (${read.result.task.id}: ${read.result.verdict})\n`);
  return 0;
}
