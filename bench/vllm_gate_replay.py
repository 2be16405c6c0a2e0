#!/usr/bin/env python3
"""Replays vLLM's release-to-release changes through tasks/vllm-block-pool-gate, and injected regressions.

History: bench/vllm_release_history.sh builds /work/src/vllm-history, one commit per PyPI release (tags
vX.Y.Z). A replayed "PR" is base = release N, head = release N+1: real merged upstream code, but several
PRs at once (release granularity), because vLLM's git history cannot be brought onto the dev box.
Only pairs whose diff touches the gate's paths are evaluated; pairs whose base or head the task's lock
cannot import (vLLM 0.9.x: see the task's requirements.in) are listed as skipped with the reason.

  python3 bench/vllm_gate_replay.py pairs                 # list every pair and whether it touches the paths
  python3 bench/vllm_gate_replay.py replay [vA..vB ...]   # evaluate pairs (all eligible when none named)
  python3 bench/vllm_gate_replay.py inject NAME [--on v0.20.1]
  python3 bench/vllm_gate_replay.py table                 # markdown table of the result JSONs

Run from the probegate checkout whose dist/ is current (node dist/cli/index.js); one evaluation at a
time, under nice, with PROBEGATE_CLAIMS set by the caller.
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TASK = os.environ.get("VLLM_GATE_TASK", os.path.join(HERE, "..", "tasks", "vllm-block-pool-gate"))
REPO = os.environ.get("VLLM_HISTORY", "/work/src/vllm-history")
OUT = os.environ.get("VLLM_GATE_OUT", "/tmp/vllm-gate-runs")
CLI = os.environ.get("PROBEGATE_CLI", "dist/cli/index.js")
WATCH = ["vllm/v1/core/block_pool.py", "vllm/v1/core/kv_cache_utils.py", "vllm/v1/core/kv_cache_manager.py",
         "vllm/v1/core/kv_cache_coordinator.py", "vllm/v1/core/single_type_kv_cache_manager.py",
         "vllm/v1/core/specialized_manager.py", "tests/v1/core/test_prefix_caching.py",
         "tests/v1/core/test_kv_cache_utils.py", "tests/v1/core/test_single_type_kv_cache_manager.py",
         "tests/v1/core/test_specialized_manager.py"]
# Releases the task's one lock cannot import, with the reason (checked by importing vllm/v1/core).
UNIMPORTABLE = {v: "'aimv2' is already used by a Transformers config: vLLM 0.9.x registers its own aimv2 config, "
                   "which transformers 4.57.6 (the lock's, needed by 0.10..0.23) ships too" for v in ("v0.9.0", "v0.9.0.1", "v0.9.1", "v0.9.2")}
LAST = "v0.23.0"  # newer releases need transformers 5.x (0.24.0: >= 5.5.3), which 0.8..0.23 do not import with


def git(*a):
    return subprocess.run(["git", "-C", REPO, *a], check=True, capture_output=True, text=True).stdout.strip()


def tags():
    from packaging.version import Version

    ts = [t for t in git("tag").split() if t.startswith("v")]
    return sorted(ts, key=lambda t: Version(t[1:]))


def pairs():
    """(base, head, changed watched paths, skip reason or None) for consecutive releases up to LAST."""
    from packaging.version import Version

    ts = [t for t in tags() if Version(t[1:]) <= Version(LAST[1:])]
    out = []
    for b, h in zip(ts, ts[1:]):
        changed = [p for p in git("diff", "--name-only", b, h, "--", *WATCH).split("\n") if p]
        skip = UNIMPORTABLE.get(b) or UNIMPORTABLE.get(h)
        out.append((b, h, changed, skip))
    return out


def evaluate(name, head, base):
    """One evaluation: head and base are commits of REPO. Writes OUT/name.json and its log."""
    os.makedirs(OUT, exist_ok=True)
    out = os.path.join(OUT, f"{name}.json")
    cmd = ["nice", "-n", "10", "node", CLI, "eval", "--task", TASK, "--submission", f"{REPO}/.git@{git('rev-parse', head)}",
           "--pr-base", git("rev-parse", base), "--seed", "1", "--out", out, "--always-probe"]
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    with open(out + ".log", "w") as fh:
        fh.write(f"$ {' '.join(cmd)}\nexit {proc.returncode} after {time.time() - t0:.0f} s\n{proc.stdout}\n{proc.stderr}")
    print(f"{name}: exit {proc.returncode} in {time.time() - t0:.0f} s", flush=True)
    return out


# Regressions injected on top of a real release: name -> (category the gate must flag, what, [(file, old, new)]).
INJECTIONS = {
    "leaked-ref": ("state", "BlockPool.free_blocks never drops the ref count of the last block it is given (a leaked block per freed sequence)", [
        ("vllm/v1/core/block_pool.py", "        for block in blocks_list:\n            block.ref_cnt -= 1\n",
         "        for block in blocks_list[:-1]:\n            block.ref_cnt -= 1\n")]),
    "per-token-loop": ("time", "BlockPool.get_new_blocks computes every token's slot id in a Python loop", [
        ("vllm/v1/core/block_pool.py", "        ret: list[KVCacheBlock] = self.free_block_queue.popleft_n(num_blocks)\n",
         "        ret: list[KVCacheBlock] = self.free_block_queue.popleft_n(num_blocks)\n"
         "        self._slots = [block.block_id * 16 + i for block in ret for i in range(16)]\n")]),
    "leaked-buffer": ("memory", "BlockPool keeps a 64-byte metadata buffer per block that nothing reads (Python heap per block up)", [
        ("vllm/v1/core/block_pool.py", "        # All kv-cache blocks.\n",
         "        self._block_meta = [bytearray(64) for _ in range(num_gpu_blocks)]\n        # All kv-cache blocks.\n")]),
    "changed-default": ("functional", "KVCacheManager defaults to use_eagle=True (drops the last matched block of every prefix hit)", [
        ("vllm/v1/core/kv_cache_manager.py", "        use_eagle: bool = False,\n", "        use_eagle: bool = True,\n")]),
    "deleted-test": ("structure", "test_decode deleted (renamed away)", [
        ("tests/v1/core/test_prefix_caching.py", "def test_decode(", "def _old_decode(")]),
    "skipped-test": ("structure", "test_evict marked skip", [
        ("tests/v1/core/test_prefix_caching.py", "def test_evict(", "@pytest.mark.skip(reason=\"flaky\")\ndef test_evict(")]),
    "weakened-assertion": ("structure", "test_prefill loses an assertion (the computed-token count of the first request)", [
        ("tests/v1/core/test_prefix_caching.py", "    assert num_computed_tokens == 0\n", "", 1)]),
    "loosened-tolerance": ("structure", "test_prefill's exact prefix-hit count becomes pytest.approx with abs=16 (one block of slack)", [
        ("tests/v1/core/test_prefix_caching.py", "    assert num_computed_tokens == 3 * 16\n",
         "    assert num_computed_tokens == pytest.approx(3 * 16, abs=16)\n", 1)]),
}
# The four test-weakening injections in one evaluation: the guard reports each as its own finding.
INJECTIONS["weakened-tests"] = ("structure", "test_decode deleted, test_evict skipped, an assertion of test_prefill removed, "
                                "another of its asserts given pytest.approx(abs=16)",
                                INJECTIONS["deleted-test"][2] + INJECTIONS["skipped-test"][2] + INJECTIONS["weakened-assertion"][2]
                                + INJECTIONS["loosened-tolerance"][2])


def inject(name, on):
    """Commits injection `name` on top of release `on` on a scratch branch of REPO; returns its sha."""
    git("checkout", "-q", "-f", "-B", f"inject/{name}", on)
    for rel, old, new, *nth in INJECTIONS[name][2]:
        path = os.path.join(REPO, rel)
        text = open(path).read()
        if old not in text:
            raise SystemExit(f"inject {name}: {rel} at {on} has no {old!r}")
        text = text.replace(old, new, nth[0] if nth else -1)
        open(path, "w").write(text)
        git("add", rel)
    git("-c", "user.name=probegate bench", "-c", "user.email=bench@probegate.invalid", "commit", "-q", "-m", f"inject {name}: {INJECTIONS[name][1]}")
    sha = git("rev-parse", "HEAD")
    git("checkout", "-q", "-f", "main")
    return sha


def summarize(path):
    """Verdict, official test counts, key numbers and every failed check of one result JSON."""
    r = json.load(open(path))
    checks = r.get("probes") or []
    failed = [f"{c['id']} ({c['category']}, {c['status']}): {c.get('message', '')}" for c in checks if c.get("status") != "passed"]
    byid = {c["id"]: c for c in checks}
    nums = []
    for cid in ("blocks-per-sequence", "prefix-hits", "heap-per-block.pool", "heap-per-block.manager", "allocate-free-time"):
        m = byid.get(cid, {}).get("measured") or {}
        if cid == "blocks-per-sequence" and m:
            nums.append(f"blocks/seq {m['head_blocks_per_sequence']:.2f} vs {m['base_blocks_per_sequence']:.2f}")
        elif cid.startswith("heap") and m:
            nums.append(f"{cid.split('.')[1]} heap {m['head_bytes_per_block']:.0f} vs {m['base_bytes_per_block']:.0f} B/block")
        elif cid == "allocate-free-time" and m:
            nums.append(f"time {m['time_ratio']:.2f}x (p={m['rank_test_p']:.3f})")
        elif cid == "prefix-hits" and cid in byid:
            nums.append(byid[cid]["message"].split(": ", 1)[-1])
    off = r.get("official") or {}
    tests = off.get("summary") or off.get("counts") or {}
    return r.get("verdict"), r.get("reason", ""), tests, nums, failed


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else "pairs"
    if cmd == "pairs":
        for b, h, changed, skip in pairs():
            print(f"{b}..{h}\t{len(changed)} paths\t{'skipped: ' + skip if skip else ('no watched path' if not changed else 'eligible')}")
    elif cmd == "replay":
        wanted = sys.argv[2:]
        for b, h, changed, skip in pairs():
            if (wanted and f"{b}..{h}" not in wanted) or skip or not changed:
                continue
            if os.path.exists(os.path.join(OUT, f"{h}.json")) and not wanted:
                continue
            evaluate(h, h, b)
    elif cmd == "inject":
        name, on = sys.argv[2], (sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--on" else "v0.20.1")
        evaluate(f"inject-{name}", inject(name, on), on)
    elif cmd == "table":
        print("| pair (release granularity) | watched files changed | official tests | verdict | key numbers (head vs base) | every non-passed check |")
        print("| --- | --- | --- | --- | --- | --- |")
        for b, h, changed, skip in pairs():
            files = ", ".join(p.rsplit("/", 1)[-1] for p in changed) or "none"
            row = os.path.join(OUT, f"{h}.json")
            if skip or not changed or not os.path.exists(row):
                why = f"skipped: {skip.split(': ')[0]}" if skip else ("no watched path changed" if not changed else "not run (out of time)")
                print(f"| {b}..{h} | {files} | - | {why} | - | - |")
                continue
            print(f"| {b}..{h} | {files} | {_row(row)}")
        for f in sorted(os.listdir(OUT)):
            if f.startswith("inject-") and f.endswith(".json"):
                name = f[len("inject-"):-5]
                print(f"| inject {name} ({INJECTIONS[name][0]} expected) | {INJECTIONS[name][1]} | {_row(os.path.join(OUT, f))}")


def _row(path):
    verdict, reason, tests, nums, failed = summarize(path)
    t = f"{tests.get('passed', '?')}/{tests.get('total', '?')} passed" if tests else "-"
    probe_set = json.load(open(path))["task"]["probeSet"][len("sha256:"):][:12]
    return f"{t} | {verdict}: {reason} (probe set {probe_set}) | {'; '.join(nums)} | {'<br>'.join(x.replace('|', '/') for x in failed) or '-'} |"

if __name__ == "__main__":
    main()
