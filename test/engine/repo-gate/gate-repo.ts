/** A small repository with a base commit and a PR branch, and a repository gate over it, for the gate tests. */
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { loadTask } from "../../../src/engine/task-load.js";
import { tmp } from "../../helpers.js";

export const OPS = "def add(a, b):\n    return a + b\n";
export const TEST = `import pytest
from calc.ops import add

@pytest.mark.parametrize("a,b", [(1, 2), (2, 3), (-1, 1)])
def test_add(a, b):
    assert add(a, b) == a + b
`;
export const PROBE = `import json, os
from calc import ops
out = open(os.environ["PROBEGATE_RESULTS"], "a")
ok = ops.add(2, 2) == 4
out.write(json.dumps({"id": "add-works", "category": "functional", "status": "passed" if ok else "failed", "message": "" if ok else "add(2, 2) != 4"}) + "\\n")
`;

/** Writes each file; a null text deletes it. */
export function write(root: string, files: Record<string, string | null>): void {
  for (const [rel, text] of Object.entries(files)) {
    if (text === null) {
      rmSync(join(root, rel));
      continue;
    }
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
}

export const gitIn = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", ...args], { cwd, encoding: "utf8" }).trim();

/** A repository with a base commit on main and a PR branch whose head changes `head` files. */
export function repo(head: Record<string, string | null>, baseFiles: Record<string, string> = {}): { dir: string; base: string; head: string } {
  const dir = tmp("pg-gate-repo-");
  gitIn(dir, "init", "-q");
  write(dir, { "calc/__init__.py": "", "calc/ops.py": OPS, "tests/test_ops.py": TEST, "docs/readme.md": "calc\n", ...baseFiles });
  gitIn(dir, "add", "-A");
  gitIn(dir, "commit", "-qm", "base");
  const base = gitIn(dir, "rev-parse", "HEAD");
  gitIn(dir, "checkout", "-qb", "pr");
  write(dir, head);
  gitIn(dir, "add", "-A");
  gitIn(dir, "commit", "-q", "--allow-empty", "-m", "the agent's change");
  return { dir, base, head: gitIn(dir, "rev-parse", "HEAD") };
}

export const SELECT = `    fromPaths:
      - paths: ["calc/**"]
        tests: ["tests/test_ops.py"]`;

export function gateTask(probes: Record<string, string> = { "probes/probe_functional.py": PROBE }, select = SELECT): ReturnType<typeof loadTask> {
  const dir = join(tmp("pg-gate-task-"), "calc-gate");
  write(dir, {
    "task.yml": `id: calc-gate
title: Gate calc PRs
area: other
base: { pr: true }
gpus: 0
official:
  command: ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml={junit}", "{tests}"]
  timeout: 60
  files: ["tests/**"]
  select:
${select}
probes:
  path: probes
  timeout: 30
limits: { wallClock: 300, memory: 2GiB, outputBytes: 1MiB }
`,
    "prompt.md": "Any change to calc.\n",
    ...probes,
  });
  return loadTask(dir);
}

