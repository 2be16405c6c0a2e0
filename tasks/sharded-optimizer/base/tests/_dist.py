"""Run a rank function on several processes (torchrun is not usable with torch 1.13 on Python 3.11).

Backend and world size come from PROBEGATE_BACKEND / PROBEGATE_WORLD_SIZE (gloo / 2 by default);
with NCCL, rank r runs on cuda:r. Ranks are forked from a server that has imported torch once:
importing torch in every rank costs seconds on a small CI machine.
"""
import multiprocessing
import os
import time
import traceback

import torch
import torch.distributed as dist

TIMEOUT_S = 300


def backend():
    name = os.environ.get("PROBEGATE_BACKEND")
    if name:
        return name
    return "nccl" if torch.cuda.is_available() and torch.cuda.device_count() > 1 else "gloo"


def world_size():
    return int(os.environ.get("PROBEGATE_WORLD_SIZE", "2"))


def device(rank):
    return torch.device("cuda", rank) if backend() == "nccl" else torch.device("cpu")


def _worker(rank, size, name, rendezvous, out_dir, fn, args):
    try:
        if name == "nccl":
            torch.cuda.set_device(rank)
        else:
            # The ranks share the CPU cores; more threads per rank only oversubscribe them.
            torch.set_num_threads(1)
        dist.init_process_group(name, init_method=f"file://{rendezvous}", rank=rank, world_size=size)
        try:
            result = fn(rank, size, *args)
            torch.save(result, os.path.join(out_dir, f"result{rank}.pt"))
            dist.barrier()
        finally:
            dist.destroy_process_group()
    except BaseException:
        with open(os.path.join(out_dir, f"error{rank}.txt"), "w") as f:
            f.write(traceback.format_exc())
        raise


def _context():
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed"])
    return ctx


def run(fn, tmp_path, *args):
    """Run ``fn(rank, world_size, *args)`` on every rank; return the list of per-rank results.

    ``fn`` must be a module-level function (the ranks import it)."""
    size = world_size()
    out_dir = str(tmp_path)
    rendezvous = os.path.join(out_dir, "rendezvous")
    ctx = _context()
    procs = [ctx.Process(target=_worker, args=(r, size, backend(), rendezvous, out_dir, fn, args))
             for r in range(size)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + TIMEOUT_S
    failed_at = None
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        procs[0].join(0.1)
        if failed_at is None and any(p.exitcode not in (None, 0) for p in procs):
            failed_at = time.monotonic()
        # Peers of a failed rank may wait for it forever (rendezvous, collectives).
        if failed_at is not None and time.monotonic() - failed_at > 5:
            break
    for p in procs:
        if p.is_alive():
            p.kill()
        p.join()
    errors = []
    for r, p in enumerate(procs):
        path = os.path.join(out_dir, f"error{r}.txt")
        if os.path.exists(path):
            with open(path) as f:
                errors.append(f"rank {r}:\n{f.read()}")
        elif p.exitcode != 0:
            errors.append(f"rank {r} exited with code {p.exitcode}")
    if errors:
        raise RuntimeError("\n".join(errors))
    return [torch.load(os.path.join(out_dir, f"result{r}.pt"), map_location="cpu") for r in range(size)]
