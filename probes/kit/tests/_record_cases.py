"""Rank functions for test_record.py (module-level: the record run pickles them by reference)."""
import json
import sys
import time

import torch
import torch.distributed as dist

N = 1 << 16


def reference(rank, world):
    t = torch.full((N,), float(rank + 1))
    dist.all_reduce(t)
    return t[:2].clone()


def through_store(rank, world):
    t = reference(rank, world)
    store = dist.distributed_c10d._get_default_store()
    store.set(f"copy{rank}.{time.monotonic_ns()}", torch.zeros(N).numpy().tobytes())
    return t


if __name__ == "__main__":
    from probegate_probe.record import in_private_namespace, traffic_of_record

    out = {"private": in_private_namespace()}
    for name, fn in (("same", reference), ("store", through_store)):
        r = traffic_of_record(fn, reference, world_size=2, steps=2, pause=(0.0, 0.01), seed=int(sys.argv[1]))
        out[name] = dict(r.measured(), passed=r.passed, message=r.message(), values=r.candidate_values[0].tolist())
    print("RECORD " + json.dumps(out))
