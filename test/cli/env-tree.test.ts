import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { tmp } from "../helpers.js";
import { isolatedStore, needsUvAndPypi } from "../engine/environment/tiny-env.js";
import { cli } from "./run-cli.js";

const skip = await needsUvAndPypi();

function write(root: string, files: Record<string, string>): string {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
  return root;
}

/** A gate whose environment follows its repository's requirements.txt. */
function gateTask(): string {
  return write(join(tmp("pg-env-tree-cli-"), "tree-gate"), {
    "task.yml": `id: tree-gate
title: A gate whose environment follows the repository
area: other
base: { pr: true }
gpus: 0
environment:
  python: ">=3.11,<3.12"
  fromTree: { requirements: ["requirements.txt"] }
official:
  command: ["{python}", "-m", "pytest"]
probes:
  path: probes
`,
    "prompt.md": "Any change.\n",
    "probes/probe_x.py": "",
  });
}

describe("probegate env build, for a gate whose environment follows the repository", () => {
  it("without --tree, says it cannot know the base and how to build it ahead (exit 0: nothing failed)", async () => {
    const r = await cli("env", "build", gateTask());
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/▸ tree-gate: not built: its environment follows the repository \(environment\.fromTree: requirements\.txt\), so each evaluation builds it from the PR's merge base\. To build it ahead, pass a checkout of that base: probegate env build --tree <checkout> /);
    expect(r.out).toMatch(/^│ tree-gate\s+│ -\s+│ -\s+│ -\s+│ needs --tree\s+│ -\s+│ -\s+│$/m);
  });

  it.skipIf(skip !== "")(`with --tree, builds it from that checkout's requirements, then reuses it${skip}`, async () => {
    const store = isolatedStore();
    const checkout = write(tmp("pg-env-tree-checkout-"), { "requirements.txt": "six==1.16.0\n" });
    const task = gateTask();
    const first = await cli("env", "build", "--tree", checkout, task);
    expect(first.code).toBe(0);
    expect(first.err).toMatch(/▸ tree-gate: environment environment\.fromTree: requirements\.txt of --tree .*\n  · compiling a lock from --tree /);
    expect(first.out).toMatch(/^│ tree-gate\s+│ [0-9a-f]{16}\s+│ 3\.11\.2\s+│ -\s+│ built\s+│/m);
    const again = await cli("env", "build", "--json", "--tree", checkout, task);
    expect(JSON.parse(again.out)).toEqual([expect.objectContaining({ task: "tree-gate", status: "reused", python: "3.11.2" })]);
    expect(store.uvCalls().filter((c) => c.startsWith("pip compile"))).toHaveLength(1);
    const list = await cli("env", "list");
    expect(list.out).toMatch(/│ tree-[0-9a-f]{16}-py3\.11\.2\s+│ fromTree: requirements\.txt\s+│ 3\.11\.2/);
  });

  it("with --tree lacking the declared file, exits 3 naming it", async () => {
    isolatedStore();
    const r = await cli("env", "build", "--tree", tmp("pg-env-tree-empty-"), gateTask());
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/✗ requirements\.txt is not in --tree .* \(environment\.fromTree\.requirements in .*task\.yml\)/);
  });
});
