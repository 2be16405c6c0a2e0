import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { jsonSchemas } from "../../../src/cli/schema-command.js";

describe("mutants.schema.json", () => {
  // Published beside task.schema.json so an editor checks a task's mutants.yml as it is written.
  const schema = jsonSchemas()["mutants.schema.json"] as Record<string, unknown>;
  const validate = new Ajv2020.default({ strict: false }).compile(schema);

  it("accepts a threshold and equivalent marks with reasons", () => {
    expect(validate({ threshold: 0.9, equivalent: [{ id: "probegate/RemoveStatement@lib.py:9#0", reason: "the loop returns 0 as well" }] })).toBe(true);
  });

  it("refuses a mark without a reason, and a threshold outside 0..1", () => {
    expect(validate({ equivalent: [{ id: "core/NumberReplacer@lib.py:3#1" }] })).toBe(false);
    expect(validate({ threshold: 1.5 })).toBe(false);
  });
});
