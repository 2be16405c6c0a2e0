import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { EvaluationResult } from "../src/core/result.js";

export const ROOT = resolve(import.meta.dirname, "..");
export const FIXTURES = join(ROOT, "test", "fixtures");
export const TINY_TASK = join(FIXTURES, "tasks", "tiny-sum");
export const TINY_SUBS = join(FIXTURES, "submissions", "tiny-sum");
export const KIT = join(ROOT, "probes", "kit");

/** The folders `tmp` made in this test file, removed after it by test/setup.ts. */
export const madeFolders: string[] = ((globalThis as { __pgTmp?: string[] }).__pgTmp ??= []);

/** A fresh folder under the OS temp dir, removed when the test file ends. */
export function tmp(prefix = "pg-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  madeFolders.push(dir);
  return dir;
}

/**
 * A stand-in for nvidia-smi with `gpus` GPUs, as the job pool calls it; GPU i reads the MiB in the
 * file used-i (0 when absent), which `setUsed` writes.
 */
export function fakeNvidiaSmi(gpus: number): { path: string; setUsed: (gpu: number, mib: number) => void } {
  const dir = tmp("pg-pool-smi-");
  const path = join(dir, "nvidia-smi");
  writeFileSync(
    path,
    `#!/bin/bash
if [[ "$1" == --query-gpu=index,name* ]]; then for i in $(seq 0 ${gpus - 1}); do echo "$i, Fake GPU, 81559, 999.1"; done; exit 0; fi
ids=""; for a in "$@"; do [[ "$a" == --id=* ]] && ids="\${a#--id=}"; done
for i in \${ids//,/ }; do echo "$i, $(cat "${dir}/used-$i" 2>/dev/null || echo 0)"; done
[[ "$*" == *--loop-ms* ]] && exec sleep 1000
exit 0
`,
  );
  chmodSync(path, 0o755);
  return { path, setUsed: (gpu, mib) => writeFileSync(join(dir, `used-${gpu}`), String(mib)) };
}

/** A schema-valid result to vary in rendering and verdict tests. */
export function sampleResult(over: Partial<EvaluationResult> = {}): EvaluationResult {
  return {
    schemaVersion: 1,
    task: { id: "sharded-optimizer", title: "Shard optimizer state", area: "training", probeSet: `sha256:${"a".repeat(64)}` },
    submission: { kind: "git", source: "octo/repo@abc", repo: "octo/repo", ref: "feature", sha: "0123456789abcdef0123456789abcdef01234567" },
    verdict: "probe-rejected",
    reason: "passes the official tests, fails 1 of 2 hidden probes",
    official: {
      passed: true,
      reason: null,
      exitCode: 0,
      signal: null,
      limit: null,
      reportFound: true,
      counts: { total: 4, passed: 4, failed: 0, errors: 0, skipped: 0 },
      failing: [],
      durationS: 3.2,
    },
    probes: [
      { id: "state-sharded", category: "memory", status: "failed", message: "optimizer state per rank is 64.0 MiB | expected ≤ 34 MiB", location: { path: "dpopt/optim.py", line: 42 }, measured: { bytes: 67108864 }, probe: "probe_memory", attempts: 1, durationS: 2 },
      { id: "interfaces", category: "structure", status: "passed", message: "", location: null, measured: null, probe: "probe_structure", attempts: 1, durationS: 1 },
    ],
    workspaceResets: [],
    durations: { workspaceS: 0.2, officialS: 3.2, probesS: 3, totalS: 6.5 },
    gpuSeconds: 0,
    environment: { platform: "linux-x64", node: "v20", python: "3.11", torch: "1.13.1", cuda: null, backend: "gloo", worldSize: 2, gpus: [], sandboxed: false },
    startedAt: "2026-12-02T00:00:00.000Z",
    finishedAt: "2026-12-02T00:00:06.500Z",
    error: null,
    signature: null,
    ...over,
  };
}
