import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { tmp } from "../helpers.js";

/**
 * A small repository gate and the PR repositories it judges, for the Action and the app's
 * end-to-end test: `calc/sync.py` all-reduces a tensor once per step at the base; a head that
 * all-reduces twice sends 2.00× the bytes, which the differential probe measures over gloo.
 */

export const SYNC = "import torch.distributed as dist\n\n\ndef sync(t):\n    dist.all_reduce(t)\n    return t\n";
/** The agent's change: one extra all-reduce per step (line 6 of calc/sync.py). */
export const SYNC_TWICE = SYNC.replace("    dist.all_reduce(t)\n", "    dist.all_reduce(t)\n    dist.all_reduce(t)\n");

const TESTS = `from calc.sync import sync


def test_sync_is_callable():
    assert callable(sync)
`;

/** The differential probe: one scenario run on base and head, compared in traffic per step. */
export const TRAFFIC_PROBE = `import torch
from probegate_probe.differential import differential

def scenario(rank, world, rep):
    from calc import sync
    return sync.sync(torch.ones(1024) * (rank + 1))

if __name__ == "__main__":
    sides = differential(scenario, world_size=2, measure=("traffic",))
    sides.check_traffic("sync-traffic", per="step", location={"path": "calc/sync.py", "line": 4})
`;

/** Writes `files` (relative path → text) under `root`. */
export function write(root: string, files: Record<string, string>): void {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
}

/** git in `cwd`, with an identity and a default branch; returns stdout trimmed. */
export const gitIn = (cwd: string, ...args: string[]): string =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", ...args], { cwd, encoding: "utf8" }).trim();

/** A PR's repository: a base commit on main and a branch whose head writes `head` over it. */
export function prRepository(head: Record<string, string>): { dir: string; base: string; head: string } {
  const dir = tmp("pg-gate-pr-");
  gitIn(dir, "init", "-q");
  write(dir, { "calc/__init__.py": "", "calc/sync.py": SYNC, "tests/test_sync.py": TESTS });
  gitIn(dir, "add", "-A");
  gitIn(dir, "commit", "-qm", "base");
  const base = gitIn(dir, "rev-parse", "HEAD");
  gitIn(dir, "checkout", "-qb", "agent/extra-sync");
  write(dir, head);
  gitIn(dir, "add", "-A");
  gitIn(dir, "commit", "-qm", "the agent's change");
  return { dir, base, head: gitIn(dir, "rev-parse", "HEAD") };
}

/**
 * A checkout of the PR as actions/checkout leaves it: a clone of `origin` at `sha`, detached, with
 * the whole history (`fetch-depth: 0`) unless `depth` says otherwise.
 */
export function checkoutOf(origin: string, sha: string, depth?: number): string {
  const dir = join(tmp("pg-gate-checkout-"), "submission");
  mkdirSync(dir);
  gitIn(dir, "init", "-q");
  gitIn(dir, "fetch", "-q", ...(depth ? [`--depth=${depth}`] : []), `file://${origin}`, sha);
  gitIn(dir, "checkout", "-q", "--detach", sha);
  return dir;
}

/** The gate task `calc-gate` (base: {pr: true}, no GPU, the repository's tests for calc/**) with `probes`. */
export function gateTaskDir(probes: Record<string, string> = { "probes/probe_traffic.py": TRAFFIC_PROBE }): string {
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
    fromPaths:
      - paths: ["calc/**"]
        tests: ["tests/test_sync.py"]
probes:
  path: probes
  timeout: 120
limits: { wallClock: 300, memory: 2GiB, outputBytes: 1MiB }
`,
    "prompt.md": "Any change to calc.\n",
    ...probes,
  });
  return dir;
}
