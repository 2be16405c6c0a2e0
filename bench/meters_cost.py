#!/usr/bin/env python3
"""What the meters of record (#38) cost, side by side in one run, and the record's noise.

  bwrap --unshare-user --unshare-net --dev-bind / / python3 bench/meters_cost.py [--rounds 5]

(a network namespace of its own, as every sandboxed job has). Prints, per round: one run_ranks of a
counted all_reduce step (today's traffic probe) against traffic_of_record of the same step (two rank
jobs of 3 paced steps); time_ratio of a 1M-element normalize with the cadence pauses against without;
and the record's spread: |candidate - reference| bytes for identical sides.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "probes" / "kit"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from probegate_probe import CollectiveCounter, run_ranks, time_ratio  # noqa: E402
from probegate_probe.record import in_private_namespace, traffic_of_record  # noqa: E402

N = 1 << 16


def step(rank, world):
    t = torch.full((N,), float(rank + 1))
    dist.all_reduce(t)
    return t[:2].clone()


def counted(rank, world):
    with CollectiveCounter() as c:
        step(rank, world)
    return c.total_bytes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(f"private network namespace: {in_private_namespace()}; torch {torch.__version__}")
    run_ranks(counted, world_size=2)  # the rank server's start, outside every figure
    rows = []
    for i in range(args.rounds):
        t0 = time.perf_counter()
        run_ranks(counted, world_size=2)
        t1 = time.perf_counter()
        rec = traffic_of_record(step, step, world_size=2, steps=3, seed=i)
        t2 = time.perf_counter()
        x = torch.randn(1_000_000)
        fn = lambda: x / x.abs().sum()  # noqa: E731
        t3 = time.perf_counter()
        time_ratio(fn, fn, repeats=9, warmup=2, pause=None)
        t4 = time.perf_counter()
        time_ratio(fn, fn, repeats=9, warmup=2)
        t5 = time.perf_counter()
        rows.append((t1 - t0, t2 - t1, t4 - t3, t5 - t4, abs(rec.extra_bytes), rec.reference_bytes))
        print(f"round {i + 1}: counter {rows[-1][0]:.2f} s, record {rows[-1][1]:.2f} s; time_ratio {rows[-1][2]:.2f} s, "
              f"paced {rows[-1][3]:.2f} s; record spread {rows[-1][4]} B of {rows[-1][5]:,} B")
    med = [statistics.median(r[k] for r in rows) for k in range(6)]
    print(f"median: record/counter {med[1] / med[0]:.2f}x ({med[1] - med[0]:+.2f} s); paced/unpaced time_ratio "
          f"{med[3] / med[2]:.2f}x ({med[3] - med[2]:+.2f} s); record spread max {max(r[4] for r in rows)} B "
          f"(tolerance floor 16,384 B + 1%)")


if __name__ == "__main__":
    main()
