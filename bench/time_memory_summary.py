#!/usr/bin/env python3
"""Summary of bench/time_memory_runs.sh's results: per task and check, the runs, the runs not passed (with
their messages), the checks measured more than once, and the headroom: the measured figure as a share of
the figure that fails it (1.0 = at the limit), median and worst over every run.

  python3 bench/time_memory_summary.py [OUT]     (default /tmp/tm20)
"""
import collections
import glob
import json
import re
import statistics
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/tm20"
# check -> (what the share is, share of its failing figure) from the check's `measured`
SHARE = {
    "decode-step-time": ("ratio / margin", lambda m: m["ratio"] / m["margin"]),
    "kv-bytes-per-rank": ("max(tensors / limit, peak / peak limit)",
                          lambda m: max(m["tensor_bytes"] / m["limit_bytes"], m["peak_bytes"] / m["peak_limit_bytes"])),
    "decode-work-per-token": ("lines per cached token / limit", lambda m: m["lines_per_cached_token"] / m["limit"]),
    "step-time": ("median ratio / margin", lambda m: m["median_ratio"] / m["margin"]),
    "optimizer-memory-sharded": ("retained / allowed", lambda m: m["retained_bytes"] / m["allowed_bytes"]),
    "checkpoint-is-rank-shard": ("checkpoint / allowed", lambda m: m["checkpoint_bytes"] / m["allowed_bytes"]),
    "sync-many-small-tensors": ("ratio / margin", lambda m: m["ratio"] / m["margin"]),
    "trainer-sync-peak-memory": ("max(peak / limit, touched / limit)",
                                 lambda m: max(m["trainer_peak_bytes"] / m["limit_bytes"], m["trainer_touched_bytes"] / m["touched_limit_bytes"])),
}


def main():
    rows = collections.defaultdict(lambda: {"runs": 0, "bad": [], "shares": [], "remeasured": 0})
    verdicts = collections.Counter()
    rounds = collections.defaultdict(set)
    for f in sorted(glob.glob(f"{OUT}/*-*.json")):
        m = re.match(r".*/(.+)-(\d+)\.json$", f)
        if not m:
            continue
        task, r = m.group(1), int(m.group(2))
        rounds[task].add(r)
        for e in json.load(open(f)):
            sub = (e["submission"].get("source") or "?").rsplit("/", 1)[-1]
            verdicts[(task, e["verdict"])] += 1
            for c in e["probes"]:
                k = rows[(task, c["id"], c["category"])]
                k["runs"] += 1
                k["remeasured"] += c.get("attempts", 1) > 1
                if c["status"] != "passed":
                    k["bad"].append(f"round {r} {sub}: {c['status']}: {c.get('message', '')[:160]}")
                if c["id"] in SHARE and c.get("measured"):
                    k["shares"].append(SHARE[c["id"]][1](c["measured"]))
    print("| task | rounds | verdicts |\n|---|---:|---|")
    for t in sorted(rounds):
        print(f"| {t} | {len(rounds[t])} | {', '.join(f'{v} {n}' for (tt, v), n in sorted(verdicts.items()) if tt == t)} |")
    print("\n| task | check | category | runs | not passed | re-measured | headroom figure | median | worst |\n|---|---|---|---:|---:|---:|---|---:|---:|")
    for (t, cid, cat), k in sorted(rows.items()):
        what = SHARE.get(cid, ("-",))[0]
        med = f"{statistics.median(k['shares']):.3f}" if k["shares"] else "-"
        worst = f"{max(k['shares']):.3f}" if k["shares"] else "-"
        print(f"| {t} | {cid} | {cat} | {k['runs']} | {len(k['bad'])} | {k['remeasured']} | {what} | {med} | {worst} |")
    for (t, cid, _), k in sorted(rows.items()):
        for b in k["bad"]:
            print(f"  {t} {cid}: {b}")


if __name__ == "__main__":
    main()
