"""Launch a function on several ranks for the official tests (torchrun is not usable everywhere).

Backend and world size come from PROBEGATE_BACKEND / PROBEGATE_WORLD_SIZE so the same tests run
with gloo on CPU and with NCCL (one rank per GPU) on a GPU runner."""
import os
import pickle
import tempfile
import traceback

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.multiprocessing.spawn import ProcessException


def backend() -> str:
    env = os.environ.get("PROBEGATE_BACKEND")
    if env:
        return env
    return "nccl" if torch.cuda.is_available() else "gloo"


def world_size() -> int:
    return int(os.environ.get("PROBEGATE_WORLD_SIZE", "2"))


def device_for_rank(rank: int) -> torch.device:
    if backend() == "nccl":
        return torch.device("cuda", rank)
    return torch.device("cpu")


def _save(outdir, rank, record):
    # pickle, not torch.save: torch.load's weights_only default differs between torch versions.
    with open(os.path.join(outdir, "rank%d.pkl" % rank), "wb") as fh:
        pickle.dump(record, fh, protocol=pickle.HIGHEST_PROTOCOL)


def _load(outdir, rank):
    with open(os.path.join(outdir, "rank%d.pkl" % rank), "rb") as fh:
        return pickle.load(fh)


def _entry(rank, fn, ws, rdv, outdir, args):
    try:
        if backend() == "nccl":
            torch.cuda.set_device(rank)
        dist.init_process_group(backend(), init_method="file://" + rdv, rank=rank, world_size=ws)
        result = fn(rank, ws, *args)
        _save(outdir, rank, {"ok": True, "value": result})
    except BaseException:
        _save(outdir, rank, {"ok": False, "error": traceback.format_exc()})
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def spawn(fn, *args, nprocs: int = 0):
    """Run fn(rank, world_size, *args) on every rank; return the per-rank return values.

    fn must be a module-level function; its return value must be picklable (tensors go to CPU)."""
    ws = nprocs or world_size()
    with tempfile.TemporaryDirectory() as tmp:
        rdv = os.path.join(tmp, "rendezvous")
        try:
            mp.spawn(_entry, args=(fn, ws, rdv, tmp, args), nprocs=ws, join=True)
        except ProcessException as e:
            # A rank that died without raising (a signal, os._exit) leaves no record: say how it ended.
            errors = []
            for r in range(ws):
                if os.path.exists(os.path.join(tmp, "rank%d.pkl" % r)):
                    rec = _load(tmp, r)
                    if not rec["ok"]:
                        errors.append("rank %d:\n%s" % (r, rec["error"]))
            raise AssertionError("\n".join(errors) or "a rank failed: %s" % e) from None
        return [_load(tmp, r)["value"] for r in range(ws)]
