import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { readResult, type EvaluationResult } from "../core/result.js";
import { verifyResult } from "../core/result-signature.js";
import { CONTEXT_SUFFIX, ResultContextSchema, type ResultContext, type ResultFile, type SkippedFile } from "../core/scorecard/scorecard-results.js";
import { InputError } from "../engine/errors.js";

/** A result document is a few hundred kB at most; anything far larger is not one of ours. */
const MAX_BYTES = 8 * 1024 * 1024;

/** Every `*.json` under `dir` (depth-first, sorted), sidecars apart. */
function jsonFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isFile() && name.endsWith(".json") && !name.endsWith(CONTEXT_SUFFIX)) out.push(p);
    }
  };
  walk(dir);
  return out;
}

/** The sidecar of a result file, if there is one; a broken sidecar is a problem of the result file. */
function readContext(file: string): { ok: true; context: ResultContext | null } | { ok: false; why: string } {
  const side = `${file.slice(0, -".json".length)}${CONTEXT_SUFFIX}`;
  let text: string;
  try {
    text = readFileSync(side, "utf8");
  } catch {
    return { ok: true, context: null };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { ok: false, why: `its sidecar ${side} is not JSON (${(e as Error).message})` };
  }
  const parsed = ResultContextSchema.safeParse(json);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    return { ok: false, why: `its sidecar ${side}: \`${i?.path.join(".") || "(document)"}\` ${i?.message ?? "is invalid"}` };
  }
  return { ok: true, context: parsed.data };
}

/**
 * Reads every result file under `dir` for a scorecard, as leniently as `probegate verify` (a newer
 * Action's extra fields are accepted; a newer schema version is not). With `key`, only results
 * signed with it count. Each file that cannot count is returned with its path and why, never
 * dropped silently. `onProgress` is told how far it got (a folder can hold thousands of files).
 */
export function readResultsFolder(dir: string, opts: { key?: string; onProgress?: (done: number, total: number) => void } = {}): { files: ResultFile[]; skipped: SkippedFile[] } {
  let st;
  try {
    st = statSync(dir);
  } catch {
    throw new InputError(`--results ${dir}: no such folder.`, { field: "--results" });
  }
  if (!st.isDirectory()) throw new InputError(`--results ${dir}: not a folder (give the folder the result files were downloaded to).`, { field: "--results" });
  const paths = jsonFiles(dir);
  const files: ResultFile[] = [];
  const skipped: SkippedFile[] = [];
  paths.forEach((p, i) => {
    const file = relative(process.cwd(), p) || p;
    const skip = (why: string) => skipped.push({ file, why });
    if (i % 500 === 499) opts.onProgress?.(i + 1, paths.length);
    if (statSync(p).size > MAX_BYTES) return skip(`larger than ${MAX_BYTES} bytes: not a result file`);
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(p, "utf8"));
    } catch (e) {
      return skip(`not JSON (${(e as Error).message})`);
    }
    const read = readResult(json);
    if (!read.ok) return skip(read.problem);
    if (opts.key) {
      // Over the document as written: fields a newer probegate added are signed too.
      const v = verifyResult(json as EvaluationResult, opts.key);
      if (!v.ok) return skip(`${v.why}; only results signed with the given key count`);
    }
    const ctx = readContext(p);
    if (!ctx.ok) return skip(ctx.why);
    files.push({ file, result: read.result, context: ctx.context });
  });
  if (paths.length >= 500) opts.onProgress?.(paths.length, paths.length);
  return { files, skipped };
}
