"""Run a test body on several ranks: one process per rank, file:// rendezvous in a fresh temp dir.

PROBEGATE_BACKEND (gloo | nccl) and PROBEGATE_WORLD_SIZE (default 2) choose the backend and the
number of ranks; with nccl rank r uses cuda:r. Ranks are forked from a forkserver that imports
torch once for the whole test session, which keeps multi-rank tests cheap on small CI machines;
the server never touches CUDA, so every rank still starts with a clean CUDA state.
"""
import multiprocessing
import os
import pickle
import tempfile
import time
import traceback

import torch
import torch.distributed as dist


def world_size() -> int:
    return int(os.environ.get("PROBEGATE_WORLD_SIZE", "2"))


def backend() -> str:
    default = "nccl" if torch.cuda.is_available() else "gloo"
    return os.environ.get("PROBEGATE_BACKEND", default)


def _context():
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["torch", "torch.distributed"])
        return ctx
    return multiprocessing.get_context("spawn")


def _entry(rank, size, backend_name, rendezvous, out_path, fn, args):
    try:
        if backend_name == "nccl":
            torch.cuda.set_device(rank)
        dist.init_process_group(backend_name, init_method=f"file://{rendezvous}", rank=rank,
                                world_size=size)
        try:
            outcome = ("ok", fn(rank, size, *args))
            dist.barrier()
        finally:
            dist.destroy_process_group()
    except BaseException:  # noqa: B902 - the parent must see why the rank failed
        outcome = ("error", traceback.format_exc())
    with open(out_path, "wb") as f:
        pickle.dump(outcome, f)


def run_ranks(fn, *args, timeout: float = 120.0):
    """Call fn(rank, world_size, *args) on every rank; return the per-rank results.

    fn must be defined at module level of a test module; a failure on any rank fails the test.
    """
    size = world_size()
    ctx = _context()
    with tempfile.TemporaryDirectory(prefix="pagedkv-dist-") as tmp:
        rendezvous = os.path.join(tmp, "rendezvous")
        outs = [os.path.join(tmp, f"rank{r}.pkl") for r in range(size)]
        procs = [ctx.Process(target=_entry, args=(r, size, backend(), rendezvous, outs[r], fn, args))
                 for r in range(size)]
        for proc in procs:
            proc.start()
        deadline = time.monotonic() + timeout
        try:
            for proc in procs:
                proc.join(max(0.0, deadline - time.monotonic()))
            hung = [r for r, proc in enumerate(procs) if proc.is_alive()]
        finally:
            for proc in procs:
                if proc.is_alive():
                    proc.kill()
                    proc.join()
        results, errors = [], []
        for rank, path in enumerate(outs):
            if not os.path.exists(path):
                errors.append(f"rank {rank} exited with code {procs[rank].exitcode} without a result")
                continue
            with open(path, "rb") as f:
                kind, value = pickle.load(f)
            (results if kind == "ok" else errors).append(value if kind == "ok" else f"rank {rank}:\n{value}")
        if hung:
            errors.insert(0, f"ranks {hung} did not finish within {timeout} s")
        if errors:
            raise AssertionError("\n".join(errors))
    return results
