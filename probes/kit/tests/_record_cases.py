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


def forged_ok(rank, world):
    """Tells the parent it is done (a forged "ok" on the result queue it finds up the stack), then
    sends a copy through the store: the window must stay open until the rank exits."""
    import pickle

    t = reference(rank, world)
    frame = sys._getframe()
    while frame is not None and not {"results", "rank"} <= set(frame.f_locals):
        frame = frame.f_back
    if frame is not None:
        frame.f_locals["results"].put((rank, "ok", pickle.dumps(t)))
    time.sleep(0.3)
    store = dist.distributed_c10d._get_default_store()
    store.set(f"late{rank}.{time.monotonic_ns()}", torch.zeros(4 * N).numpy().tobytes())
    return t


def _reset_own_mark():
    for code in ("5", "1"):  # the high-water mark, then the referenced bits
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write(code)


def scratch_then_reset(rank, world):
    """64 MiB of scratch held for a while, freed, and the rank's own high-water mark reset after it."""
    t = reference(rank, world)
    scratch = torch.ones(16 << 20)
    time.sleep(0.05)
    del scratch
    _reset_own_mark()
    return t


_KEPT = []


def kept_in_shared_memory(rank, world):
    """8 MiB a step kept in shared memory (`share_memory_()`: pages of /dev/shm, outside RssAnon)."""
    _KEPT.append(torch.ones(2 << 20).share_memory_())
    return reference(rank, world)


_HELPER = []


def _keep(conn):
    kept = []
    while True:
        kept.append(conn.recv())


def kept_in_a_helper_process(rank, world):
    """8 MiB a step sent to a process the rank started, which keeps every one: in no rank's resident set."""
    import multiprocessing as mp

    if not _HELPER:
        ours, theirs = mp.get_context("fork").Pipe()
        helper = mp.get_context("fork").Process(target=_keep, args=(theirs,), daemon=True)
        helper.start()
        _HELPER.append(ours)
    _HELPER[0].send(torch.ones(2 << 20).numpy().tobytes())
    return reference(rank, world)


if __name__ == "__main__":
    from probegate_probe.record import in_private_namespace, traffic_of_record

    out = {"private": in_private_namespace()}
    for name, fn in (("same", reference), ("store", through_store)):
        r = traffic_of_record(fn, reference, world_size=2, steps=2, pause=(0.0, 0.01), seed=int(sys.argv[1]))
        out[name] = dict(r.measured(), passed=r.passed, message=r.message(), values=r.candidate_values[0].tolist())
    r = traffic_of_record(forged_ok, reference, world_size=2, steps=2, pause=(0.0, 0.01), seed=int(sys.argv[1]))
    out["forged"] = dict(r.measured(), passed=r.passed)
    from probegate_probe.record import memory_of_record

    for name, fn in (("mem_same", reference), ("mem_reset", scratch_then_reset), ("mem_shm", kept_in_shared_memory),
                     ("mem_helper", kept_in_a_helper_process)):
        m = memory_of_record(fn, reference, world_size=2, steps=3, pause=(0.0, 0.01), seed=int(sys.argv[1]))
        out[name] = dict(m.measured(), passed=m.passed, resets=m.resets, message=m.message())
    print("RECORD " + json.dumps(out))
