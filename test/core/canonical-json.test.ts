import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/core/canonical-json.js";
import { signResult, verifyResult } from "../../src/engine/sign.js";
import { sampleResult } from "../helpers.js";

describe("canonical JSON and signatures", () => {
  it("sorts keys at every depth and drops undefined", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: undefined }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"z":1}]},"b":1}');
    expect(() => canonicalJson({ x: Number.NaN })).toThrow(TypeError);
  });

  const key = "k".repeat(32);

  it("verifies a signed result, also after re-serialisation with other key order", () => {
    const signed = signResult(sampleResult(), key);
    const reordered = JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(signed).reverse())));
    expect(verifyResult(reordered, key)).toEqual({ ok: true });
  });

  it("rejects a changed verdict, another key, and no signature", () => {
    const signed = signResult(sampleResult(), key);
    expect(verifyResult({ ...signed, verdict: "resolved" }, key)).toEqual({ ok: false, why: "the signature does not match the result's content" });
    expect(verifyResult(signed, "x".repeat(32)).ok).toBe(false);
    expect(verifyResult(sampleResult(), key)).toEqual({ ok: false, why: "the result is not signed" });
    expect(() => signResult(sampleResult(), "short")).toThrow(RangeError);
  });
});
