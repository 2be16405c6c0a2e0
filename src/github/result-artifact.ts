import { unzipSync } from "fflate";
import { readResult, type EvaluationResult } from "../core/result.js";
import { verifyResultWithKeys } from "../core/result-signature.js";

/** The artifact the evaluator workflow uploads (examples/workflows/probegate-evaluator.yml). */
export const RESULT_ARTIFACT = "probegate-result";
/** A result document is a few hundred kB at most; anything far larger is not one of ours. */
export const RESULT_MAX_BYTES = 8 * 1024 * 1024;

/** What the app expects of the result of one evaluation attempt. */
export interface ExpectedResult {
  evaluationKey: string;
  headSha: string;
  /** The base commit the dispatch sent; a repository gate's result must have been judged against it. */
  baseSha?: string | null;
  task: string;
  /** The keys a result may be signed with: the current one, then previous ones kept through a rotation. */
  signingKeys: ReadonlyArray<string>;
}

export type CheckedResult = { ok: true; result: EvaluationResult } | { ok: false; problems: string[] };

/**
 * The one JSON file in an artifact zip. Refuses archives with no JSON, several, or a file that
 * inflates past RESULT_MAX_BYTES (checked from the zip's directory before inflating).
 */
export function resultFileFromZip(zip: Uint8Array): { ok: true; name: string; text: string } | { ok: false; problems: string[] } {
  let files: Record<string, Uint8Array>;
  const tooBig: string[] = [];
  try {
    files = unzipSync(zip, {
      filter: (f) => {
        if (!f.name.endsWith(".json")) return false;
        if (f.originalSize > RESULT_MAX_BYTES) tooBig.push(`${f.name} (${f.originalSize} bytes)`);
        return f.originalSize <= RESULT_MAX_BYTES;
      },
    });
  } catch (e) {
    return { ok: false, problems: [`the artifact is not a readable zip archive: ${(e as Error).message}`] };
  }
  if (tooBig.length) return { ok: false, problems: [`the artifact holds a file larger than ${RESULT_MAX_BYTES} bytes: ${tooBig.join(", ")}`] };
  const names = Object.keys(files);
  if (names.length !== 1) {
    return { ok: false, problems: [names.length === 0 ? "the artifact holds no .json result file" : `the artifact holds ${names.length} .json files (${names.join(", ")}); expected one`] };
  }
  const name = names[0] as string;
  return { ok: true, name, text: Buffer.from(files[name] as Uint8Array).toString("utf8") };
}

/**
 * Decides whether a result document may be reported: valid JSON, valid against the result schema,
 * signed with the app's key, and about this very attempt (evaluation key, head SHA, task, and for
 * a repository gate the base commit the app sent), so a signed result of another evaluation cannot
 * be replayed here. Every problem found is listed.
 */
export function checkResult(text: string, expected: ExpectedResult): CheckedResult {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { ok: false, problems: [`the result file is not JSON: ${(e as Error).message}`] };
  }
  const read = readResult(json);
  if (!read.ok) return { ok: false, problems: [read.problem] };
  const result = read.result;
  const problems: string[] = [];
  // The signature covers the document as it came, fields this version does not know included.
  const verified = verifyResultWithKeys(json as EvaluationResult, expected.signingKeys);
  const bad = verified.ok ? null : verified.why;
  if (bad) problems.push(bad);
  if (result.evaluationKey !== expected.evaluationKey) {
    problems.push(`the result is for evaluation ${JSON.stringify(result.evaluationKey ?? null)}, not ${JSON.stringify(expected.evaluationKey)}`);
  }
  if (result.submission.sha && result.submission.sha !== expected.headSha) problems.push(`the result judged commit ${result.submission.sha}, not ${expected.headSha}`);
  const prBase = result.submission.prBase;
  if (prBase && expected.baseSha && prBase.asked !== expected.baseSha) problems.push(`the result compared the head with base ${prBase.asked}, not ${expected.baseSha}`);
  if (result.task.id !== expected.task) problems.push(`the result is for task ${result.task.id}, not ${expected.task}`);
  return problems.length ? { ok: false, problems } : { ok: true, result };
}
