import { createRequire } from "node:module";
import type { Ajv as AjvClass, ValidateFunction } from "ajv";

const require = createRequire(import.meta.url);
// CommonJS packages: required directly so their default exports need no interop.
const Ajv = require("ajv").default as typeof AjvClass;
const addFormats = require("ajv-formats").default as (a: AjvClass) => AjvClass;

let ajv: AjvClass | undefined;
const compiled = new Map<string, ValidateFunction>();

function instance(): AjvClass {
  if (!ajv) {
    // The generated spec alone: the package root would load every GHES version (~400 MB).
    const spec = require("@octokit/openapi/generated/api.github.com.json");
    ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
    addFormats(ajv);
    ajv.addSchema(spec, "gh");
  }
  return ajv;
}

const pointer = (s: string) => s.replace(/~/g, "~0").replace(/\//g, "~1");

/**
 * Checks a request body against GitHub's OpenAPI schema for that endpoint; returns the body so it
 * can be used as a nock body matcher, and throws (failing the test) with the spec's complaints.
 */
export function assertValidBody(method: "post" | "patch" | "put", path: string, body: unknown): true {
  const ref = `gh#/paths/${pointer(path)}/${method}/requestBody/content/application~1json/schema`;
  const validate = compiled.get(ref) ?? instance().compile({ $ref: ref });
  compiled.set(ref, validate);
  if (!validate(body)) {
    throw new Error(`${method.toUpperCase()} ${path}: body breaks GitHub's OpenAPI schema: ${instance().errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`);
  }
  return true;
}
