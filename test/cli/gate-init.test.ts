import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tmp } from "../helpers.js";
import { cli } from "./run-cli.js";
import { gateInitRepo } from "./gate-init-repo.js";

describe("probegate gate init: a repository gate from a repository's tree", () => {
  it("writes a gate whose selection follows the import graph, whose environment is what the repository declares, and which validates", async () => {
    const r = gateInitRepo();
    const out = join(tmp("pg-gate-init-out-"), "dcomm-gate");
    const res = await cli("gate", "init", r.dir, "--paths", "dcomm/comm.py", "--out", out);
    expect(res.err).toBe("");
    console.log(res.out);
    expect(res.code).toBe(0);
    console.log(readFileSync(join(out, "task.yml"), "utf8"));
    console.log(readFileSync(join(out, "prompt.md"), "utf8"));
    console.log(readFileSync(join(out, "probes/probe_tests.py"), "utf8"));
  }, 60_000);
});
