import { readFileSync } from "node:fs";
import { LineCounter, parseDocument, isNode, type Document } from "yaml";
import type { z } from "zod";
import { InputError } from "./errors.js";

/** A YAML document kept with its line table, so schema errors can name the line of the field. */
export interface YamlSource {
  file: string;
  doc: Document;
  lines: LineCounter;
}

/** Reads and parses a YAML file; a missing file or a syntax error is an InputError naming the line. */
export function readYaml(file: string, what: string): YamlSource {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new InputError(`Cannot read ${what} ${file}: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message}.`, { file });
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const err = doc.errors[0];
  if (err) {
    const line = err.pos ? lines.linePos(err.pos[0]).line : undefined;
    throw new InputError(`${file}${line ? `:${line}` : ""}: ${what} is not valid YAML: ${err.message.split("\n")[0]}`, { file, line });
  }
  return { file, doc, lines };
}

/** The 1-based line of the node at `path`, or of its nearest parent that exists in the file. */
export function lineOf(src: YamlSource, path: ReadonlyArray<PropertyKey>): number | undefined {
  for (let n = path.length; n >= 0; n--) {
    const node = src.doc.getIn(path.slice(0, n) as unknown[], true);
    if (isNode(node) && node.range) return src.lines.linePos(node.range[0]).line;
  }
  return undefined;
}

/** Validates the document with a zod schema; every issue is reported as `file:line: field: message`. */
export function parseWith<S extends z.ZodType>(src: YamlSource, schema: S, what: string): z.infer<S> {
  const data: unknown = src.doc.toJS();
  const parsed = schema.safeParse(data ?? {});
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => {
    let path = issue.path;
    let message = issue.message;
    if (issue.code === "unrecognized_keys") {
      // Point at the unknown key itself, not the object holding it.
      path = [...issue.path, issue.keys[0] ?? ""];
      message = `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `'${k}'`).join(", ")}`;
    } else if (issue.code === "invalid_union") {
      message = "does not match any allowed form (see schema/*.schema.json)";
    }
    const field = path.length ? path.join(".") : "(document)";
    const line = lineOf(src, path);
    return { field, line, text: `${src.file}${line ? `:${line}` : ""}: ${field}: ${message}` };
  });
  const first = issues[0];
  throw new InputError(`Invalid ${what}:\n  ${issues.map((i) => i.text).join("\n  ")}`, { file: src.file, field: first?.field, line: first?.line });
}
