import { zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { signResult } from "../../src/engine/sign.js";
import { checkResult, RESULT_MAX_BYTES, resultFileFromZip } from "../../src/github/result-artifact.js";
import { sampleResult } from "../helpers.js";

const KEY = "result-artifact-test-key-0123";
const SHA = "0123456789abcdef0123456789abcdef01234567";
const EVAL = `octo/repo@${SHA}:sharded-optimizer:aaaaaaaaaaaaaaaa`;
const expected = { evaluationKey: EVAL, headSha: SHA, task: "sharded-optimizer", signingKeys: [KEY] };
const signed = (over = {}) => signResult(sampleResult({ evaluationKey: EVAL, ...over }), KEY);

describe("resultFileFromZip", () => {
  it("returns the one JSON file of the artifact", () => {
    const r = resultFileFromZip(zipSync({ "probegate-result.json": Buffer.from('{"a":1}') }));
    expect(r).toEqual({ ok: true, name: "probegate-result.json", text: '{"a":1}' });
  });

  it("refuses zero or several JSON files, a non-zip, and a file that inflates past the limit", () => {
    expect(resultFileFromZip(zipSync({ "a.txt": Buffer.from("x") }))).toEqual({ ok: false, problems: ["the artifact holds no .json result file"] });
    expect(resultFileFromZip(zipSync({ "a.json": Buffer.from("{}"), "b.json": Buffer.from("{}") }))).toMatchObject({ ok: false, problems: [expect.stringContaining("holds 2 .json files")] });
    expect(resultFileFromZip(Buffer.from("PK not really"))).toMatchObject({ ok: false, problems: [expect.stringContaining("not a readable zip")] });
    const bomb = zipSync({ "r.json": new Uint8Array(RESULT_MAX_BYTES + 1) }, { level: 9 });
    expect(bomb.length).toBeLessThan(100_000);
    expect(resultFileFromZip(bomb)).toMatchObject({ ok: false, problems: [expect.stringContaining(`larger than ${RESULT_MAX_BYTES} bytes`)] });
  });
});

describe("checkResult", () => {
  it("accepts a signed, schema-valid result of this evaluation", () => {
    const r = checkResult(JSON.stringify(signed()), expected);
    expect(r.ok && r.result.verdict).toBe("probe-rejected");
  });

  it("lists every problem: wrong head, wrong task, wrong key, bad signature", () => {
    const forged = { ...signed({ task: { id: "other-task", title: "x", area: "y", probeSet: "sha256:00" }, submission: { kind: "git", source: "s", sha: "f".repeat(40) }, evaluationKey: "elsewhere" }), verdict: "resolved" };
    const r = checkResult(JSON.stringify(forged), expected);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toEqual([
      "the signature does not match the result's content",
      `the result is for evaluation "elsewhere", not ${JSON.stringify(EVAL)}`,
      `the result judged commit ${"f".repeat(40)}, not ${SHA}`,
      "the result is for task other-task, not sharded-optimizer",
    ]);
  });

  it("refuses a repository gate's result judged against another base than the one dispatched; an assignment's has none to compare", () => {
    const base = "b".repeat(40);
    const gate = (asked: string) => signed({ submission: { kind: "git", source: "s", sha: SHA, prBase: { asked, mergeBase: asked } } });
    expect(checkResult(JSON.stringify(gate(base)), { ...expected, baseSha: base }).ok).toBe(true);
    expect(checkResult(JSON.stringify(gate("c".repeat(40))), { ...expected, baseSha: base })).toEqual({ ok: false, problems: [`the result compared the head with base ${"c".repeat(40)}, not ${base}`] });
    expect(checkResult(JSON.stringify(signed()), { ...expected, baseSha: base }).ok).toBe(true);
  });

  it("reads a newer Action's result with fields it does not know, signed over them, and drops them", () => {
    // As a newer probegate of the same schema version would write it: extra fields, signed as sent.
    const base = sampleResult({ evaluationKey: EVAL }) as Record<string, any>;
    const newer = { ...base, gpuTopology: "NV18", probes: base.probes.map((p: object) => ({ ...p, sampledClockMHz: 1980 })) };
    const sent = signResult(newer as never, KEY) as Record<string, any>;
    const r = checkResult(JSON.stringify(sent), expected);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.result).not.toHaveProperty("gpuTopology");
    expect(r.result.probes[0]).not.toHaveProperty("sampledClockMHz");
    expect(r.result.verdict).toBe("probe-rejected");
    // The unknown fields are under the signature too: changing one is a forgery.
    expect(checkResult(JSON.stringify({ ...sent, gpuTopology: "PCIe" }), expected)).toEqual({ ok: false, problems: ["the signature does not match the result's content"] });
  });

  it("refuses a result of a newer schema version, saying to upgrade", () => {
    const r = checkResult(JSON.stringify({ ...signed(), schemaVersion: 2 }), expected);
    expect(r).toEqual({ ok: false, problems: ["the result has schema version 2, newer than this probegate reads (1); upgrade probegate here to the Action's version"] });
    expect(checkResult(JSON.stringify({ ...signed(), verdict: "great" }), expected)).toMatchObject({ ok: false, problems: [expect.stringContaining("`verdict`")] });
  });

  it("agrees with the engine's signer on the key id, and names a foreign key", () => {
    const r = checkResult(JSON.stringify(signResult(sampleResult({ evaluationKey: EVAL }), "a-different-key-0123456789")), expected);
    expect(r).toMatchObject({ ok: false, problems: [expect.stringMatching(/^the result is signed with another key \(key id [0-9a-f]{16}, expected [0-9a-f]{16}\)$/)] });
  });
});
