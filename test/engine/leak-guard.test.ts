import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MIN_LINE, WITHHELD, leaks, probeSecrets, readProbeSecrets, withholdLeaks } from "../../src/engine/leak-guard.js";
import { tmp } from "../helpers.js";

const PROBE = [
  "# A probe. PROBEGATE-CANARY-UNIT-1234abcd",
  "import os",
  "expected_bytes_per_rank = 2 * (world - 1) / world * payload",
  "    return x",
].join("\n");

describe("probe secrets", () => {
  it("keeps long lines and canary words, not short common lines", () => {
    const s = probeSecrets([PROBE]);
    expect(s.canaries).toEqual(["probegate-canary-unit-1234abcd"]);
    expect(s.lines).toContain("expected_bytes_per_rank = 2 * (world - 1) / world * payload");
    expect(s.lines).not.toContain("import os");
    expect(s.lines).not.toContain("return x");
    expect(s.lines.every((l) => l.length >= MIN_LINE)).toBe(true);
  });

  it("reads every text file of a probe folder, skipping caches and binaries", () => {
    const dir = tmp("pg-leak-");
    mkdirSync(join(dir, "sub"));
    mkdirSync(join(dir, "__pycache__"));
    writeFileSync(join(dir, "probe_a.py"), PROBE);
    writeFileSync(join(dir, "sub", "data.txt"), "a_reference_value_table = [1, 2, 3, 4]\n");
    writeFileSync(join(dir, "__pycache__", "probe_a.pyc"), "CANARY-IN-CACHE-XYZ long enough line to count\n");
    writeFileSync(join(dir, "blob.bin"), Buffer.from([0, 1, 2, 67, 65, 78, 65, 82, 89]));
    const s = readProbeSecrets(dir);
    expect(s.canaries).toEqual(["probegate-canary-unit-1234abcd"]);
    expect(s.lines).toContain("a_reference_value_table = [1, 2, 3, 4]");
  });

  it("finds a canary in any case and a probe line inside longer text", () => {
    const s = probeSecrets([PROBE]);
    expect(leaks("found probegate-canary-unit-1234ABCD in /proc", s)).toBe(true);
    expect(leaks("AssertionError: expected_bytes_per_rank = 2 * (world - 1) / world * payload", s)).toBe(true);
    expect(leaks("total() returned 0, expected 23", s)).toBe(false);
    expect(leaks("import os", s)).toBe(false);
  });

  it("withholds leaking strings and keys anywhere in a document, and counts them", () => {
    const s = probeSecrets([PROBE]);
    const doc = {
      verdict: "probe-rejected",
      probes: [
        { id: "a", message: "PROBEGATE-CANARY-UNIT-1234abcd says hi", measured: { "probegate-canary-unit-1234abcd": 1, ok: 2 } },
        { id: "b", message: "fine" },
      ],
    };
    const { value, withheld } = withholdLeaks(doc, s);
    expect(withheld).toBe(2);
    expect(value.probes[0]?.message).toBe(WITHHELD);
    expect(value.probes[0]?.measured).toEqual({ "withheld-2": 1, ok: 2 });
    expect(value.probes[1]).toEqual({ id: "b", message: "fine" });
    expect(doc.probes[0]?.message).toContain("CANARY");
  });
});
