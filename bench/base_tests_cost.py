#!/usr/bin/env python3
"""The cost of judging a repository gate's head by the base's own tests (issue 36), from results.

For each result JSON given (a replay's --out-dir, say), from the jobs' timeline of record:
- head: the official job alone (what the official phase cost before: the head's tests on the head);
- phase: first start to last end of the official jobs (head, base, base's tests on the head),
  which the engine packs side by side;
- ratio = phase / head, and whether the base's outcomes came from the runner's cache.
Prints a markdown table and the median ratio and cache hit rate.

  python3 bench/base_tests_cost.py /tmp/verl-replay/*.json
"""
import json
import statistics
import sys


def row(path):
    with open(path) as f:
        r = json.load(f)
    jobs = [j for j in (r.get("jobs") or []) if j["kind"] == "official"]
    head = next((j for j in jobs if j["id"] == "official"), None)
    if not head or len(jobs) < 2:
        return None
    span = max(j["endS"] for j in jobs) - min(j["startS"] for j in jobs)
    alone = head["endS"] - head["startS"]
    base = (r.get("official") or {}).get("base") or {}
    return {"file": path.rsplit("/", 1)[-1], "sha": (r["submission"].get("sha") or "")[:9], "verdict": r["verdict"], "head": alone, "phase": span, "ratio": span / alone if alone else float("nan"), "cached": bool(base.get("cached"))}


def main(paths):
    rows = [x for x in (row(p) for p in paths if p.endswith(".json")) if x]
    print("| result | head sha | verdict | head's tests alone (s) | official phase, 3 runs packed (s) | ratio | base cached |")
    print("|---|---|---|---:|---:|---:|---|")
    for x in rows:
        print(f"| {x['file']} | `{x['sha']}` | {x['verdict']} | {x['head']:.1f} | {x['phase']:.1f} | {x['ratio']:.2f}× | {'yes' if x['cached'] else 'no'} |")
    if rows:
        print(f"\nmedian ratio {statistics.median(x['ratio'] for x in rows):.2f}× over {len(rows)} evaluations; base cache hits {sum(x['cached'] for x in rows)} of {len(rows)}")


if __name__ == "__main__":
    main(sys.argv[1:])
