import { createHmac } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { KIT_PUBLIC_NAME, copyKit, launchedArgv, sealKey, unsealResults } from "../../src/engine/probe-guard.js";
import { KIT, tmp } from "../helpers.js";

/** A results line as the kit writes it: the record's JSON with its seal as the last field. */
function sealed(record: object, key: Buffer): string {
  const body = JSON.stringify(record).replace(/,/g, ", ").replace(/":/g, '": ');
  const seal = createHmac("sha256", key).update(body, "utf8").digest("hex");
  return `${body.slice(0, -1)}, "seal": "${seal}"}`;
}

describe("the seal on probe results (issue 29)", () => {
  const key = sealKey();
  const marker = sealed({ probegate: "kit" }, key);
  const good = sealed({ id: "normalize-speed", category: "time", status: "failed", message: "slow" }, key);

  it("keeps sealed lines (without the seal) and drops the kit's marker", () => {
    const out = unsealResults(`${marker}\n${good}\n`, key, "probe_time");
    expect(out.forged).toBe(0);
    expect(out.text.trim().split("\n").map((l) => JSON.parse(l))).toEqual([{ id: "normalize-speed", category: "time", status: "failed", message: "slow" }]);
  });

  it("turns an unsealed line into a failed forged-line check once the kit announced itself", () => {
    const forged = JSON.stringify({ id: "normalize-speed", category: "time", status: "passed" });
    const out = unsealResults(`${marker}\n${forged}\n`, key, "probe_time");
    expect(out.forged).toBe(1);
    expect(JSON.parse(out.text.trim())).toMatchObject({ id: "probe-time.forged-line-2", category: "time", status: "failed", message: expect.stringMatching(/not written by the probe kit \(it has no seal\)/) });
  });

  it("catches a sealed line whose verdict was changed afterwards", () => {
    const turned = good.replace('"failed"', '"passed"');
    const out = unsealResults(`${marker}\n${turned}\n`, key, "probe_time");
    expect(out.forged).toBe(1);
    expect(out.text).toMatch(/its seal does not match/);
  });

  it("leaves a probe that never imported the kit (plain lines, no marker) as it was", () => {
    const plain = JSON.stringify({ id: "total-speed", category: "time", status: "passed" });
    expect(unsealResults(`${plain}\n`, key, "probe_time")).toEqual({ text: `${plain}\n`, forged: 0 });
  });

  it("does not take another run's key", () => {
    const other = sealKey();
    const out = unsealResults(`${sealed({ probegate: "kit" }, other)}\n${sealed({ id: "a", category: "time", status: "passed" }, other)}\n`, key, "probe_time");
    expect(out.forged).toBe(2);
  });
});

describe("the launcher and the kit's per-evaluation name", () => {
  it("puts the launcher before the probe file, and leaves a command without it alone", () => {
    expect(launchedArgv(["/py", "/p/probe_a.py", "--x"], "/p/probe_a.py", "/k/probegate_launch.py")).toEqual({ argv: ["/py", "/k/probegate_launch.py", "/p/probe_a.py", "--x"], launched: true });
    expect(launchedArgv(["/py", "-m", "runner"], "/p/probe_a.py", "/k/probegate_launch.py")).toEqual({ argv: ["/py", "-m", "runner"], launched: false });
  });

  it("copies the kit under its own name, with probegate_probe handing it out", () => {
    const dest = join(tmp("pg-kit-"), "kit");
    const kit = copyKit(KIT, dest, "_mabc123");
    expect(kit.alias).toBe("_mabc123");
    expect(existsSync(join(dest, "_mabc123", "__init__.py"))).toBe(true);
    expect(existsSync(join(dest, "_mabc123", "_guard.py"))).toBe(true);
    expect(existsSync(kit.launcher)).toBe(true);
    expect(existsSync(join(dest, "tests"))).toBe(false);
    expect(readFileSync(join(dest, KIT_PUBLIC_NAME, "__init__.py"), "utf8")).toContain('import_module("_mabc123")');
  });
});
