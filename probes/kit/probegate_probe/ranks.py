"""Run a function on N ranks of a fresh process group (spawned processes; the engine's port, else file://)."""
from __future__ import annotations

import contextlib
import datetime
import faulthandler
import os
import pickle
import queue as queue_mod
import shutil
import signal
import tempfile
import time
from typing import Optional

from . import _conf
from ._rank_errors import RankError, _error_info, _loads, _main_thread_frames, _pick_error, _raise
from ._server import _check_preload, _context

_PORT_ENV = "PROBEGATE_RENDEZVOUS_PORT"


def world_size(default: int = 2) -> int:
    value = _conf.get("PROBEGATE_WORLD_SIZE")
    return int(value) if value else int(default)


def backend() -> str:
    value = _conf.get("PROBEGATE_BACKEND")
    if value:
        if value not in ("gloo", "nccl"):
            raise ValueError(f"PROBEGATE_BACKEND must be gloo or nccl, got {value!r}")
        return value
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() >= world_size():
        return "nccl"
    return "gloo"


def device_for_rank(rank: int):
    import torch

    if backend() == "nccl" and torch.cuda.is_available():
        return torch.device("cuda", rank % torch.cuda.device_count())
    return torch.device("cpu")


def importing_in_child() -> bool:
    """True while a new rank process imports the probe's __main__ module (before fn runs)."""
    import multiprocessing

    return bool(getattr(multiprocessing.current_process(), "_inheriting", False))


def guard_child_import(what: str) -> None:
    """Refuse `what` while a rank process re-imports the probe's __main__ module."""
    if importing_in_child():
        raise RuntimeError(
            f"{what} ran while a rank process imported the probe file: guard the probe's "
            "top-level code with `if __name__ == \"__main__\":` (spawned ranks import it)")


def _to_cpu(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return type(value)((k, _to_cpu(v)) for k, v in value.items())
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_to_cpu(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(v) for v in value)
    return value


def _child(rank, n, backend_name, init_method, fn, args, results, stack_file, timeout, env, guard_conf=None, go=None):
    os.environ.clear()
    os.environ.update(env)
    os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(n)})
    if guard_conf is not None:
        # As in the parent: the kit configured, its public name gone, the audit hook on, before fn
        # imports the submission (issue 29).
        import sys

        from . import _guard

        _guard.start_rank(guard_conf, sys.modules[__package__], rank)
    # On timeout the parent sends SIGUSR1: every thread's stack lands in stack_file, so a hang
    # inside the submission is reported where it waits.
    stack_fh = open(stack_file, "w")
    faulthandler.register(signal.SIGUSR1, file=stack_fh, all_threads=True)
    import torch
    import torch.distributed as dist

    try:
        if backend_name == "nccl":  # NCCL binds its communicator to the current device at init
            torch.cuda.set_device(device_for_rank(rank))
        dist.init_process_group(backend_name, init_method=init_method, rank=rank, world_size=n,
                                timeout=datetime.timedelta(seconds=timeout))
        results.put((rank, "ready", b""))
        if go is not None and not go.wait(timeout):  # a record's window opens before fn starts
            raise TimeoutError("the probe did not open the record's window")
        value = fn(rank, n, *args)
        payload = pickle.dumps(_to_cpu(value), protocol=pickle.HIGHEST_PROTOCOL)
        results.put((rank, "ok", payload))
    except BaseException as exc:  # noqa: B902 - everything must reach the parent
        results.put((rank, "error", pickle.dumps(_error_info(exc))))
        return
    try:
        dist.destroy_process_group()
    except Exception:
        pass


def run_ranks(fn, world_size: Optional[int] = None, args=(), backend: Optional[str] = None,
              timeout: float = 180, preload=(), _init_method: Optional[str] = None, _on=None):
    """fn(rank, world_size, *args) on each rank; returns the per-rank values (tensors on CPU).

    `timeout` bounds fn, counted from when all ranks have joined the process group (spawning
    and joining get STARTUP_S more).
    fn must be a module-level function (it is pickled by reference). A probe file run as a
    script works: spawned ranks import it as `__mp_main__`, so its top-level code must sit
    under `if __name__ == "__main__":`. Raises RankError when a rank fails or on timeout.

    `preload`: module names the rank server imports once, beside torch and the kit, so that each
    rank forks with them loaded (a heavy package of the task's environment, e.g. verl's pandas,
    ray and transformers: seconds per rank saved). The server starts on the process's first
    run_ranks call and keeps what it preloaded then: give the same list on every call (names
    asked for later are imported by each rank when it needs them, as without preload).
    What it means for the guard (issue 29): preloaded modules are imported in the server, before
    any rank's guard starts and before the submission is imported, in an environment that is the
    probe's (PROBEGATE_* set, `__main__` the probe file) and without the audit hook. So a module
    of the workspace is refused (ValueError): the submission would run unwatched where it can tell
    it is probed. A library preloaded is only a module already in `sys.modules` when the
    submission is imported — which the submission can see, as it sees torch there; preload only
    what the official run imports too.
    """
    guard_child_import("run_ranks()")
    preload = _check_preload(preload)
    n = world_size if world_size is not None else globals()["world_size"]()
    backend_name = backend or globals()["backend"]()
    if getattr(fn, "__qualname__", "").count("<") or not getattr(fn, "__module__", None):
        raise TypeError("run_ranks needs a module-level function (lambdas and nested functions "
                        "cannot be sent to spawned ranks)")
    ctx = _context(preload)
    tmp = tempfile.mkdtemp(prefix="probegate-ranks-")
    init_method = _init_method or rendezvous(tmp)
    results = ctx.Queue()
    go = ctx.Event() if _on is not None else None
    procs = []
    env = dict(os.environ)  # forkserver children would otherwise see the server's environment
    from . import _guard

    guard = _guard.active()
    guard_conf = guard.rank_conf() if guard is not None else None
    try:
        for rank in range(n):
            # A plain process name: "probegate-rank0" would tell the submission it is probed (#38).
            p = ctx.Process(target=_child, name=f"Process-{rank + 1}",
                            args=(rank, n, backend_name, init_method, fn, tuple(args), results,
                                  os.path.join(tmp, f"stack{rank}.txt"), timeout, env, guard_conf, go))
            with (guard.as_launched() if guard is not None else contextlib.nullcontext()):
                p.start()  # pickles fn and args: an unpicklable one fails here, before any rank runs
            procs.append(p)
        return _collect(procs, results, n, timeout, tmp, _on, go)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        for p in procs:
            p.join(5)
        results.close()
        shutil.rmtree(tmp, ignore_errors=True)


def rendezvous(tmp: str) -> str:
    """Where the ranks meet: the port the engine gave this job, else a file of this call's own.

    The engine packs jobs side by side and hands each its own port ($PROBEGATE_RENDEZVOUS_PORT,
    also MASTER_PORT), so two probes never meet on torch's default 29500.
    """
    port = _conf.get(_PORT_ENV, "").strip()
    if port:
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{_PORT_ENV} must be a port number, got {port!r}")
        return f"tcp://127.0.0.1:{int(port)}"
    return "file://" + os.path.join(tmp, "rendezvous")


STARTUP_S = 120  # spawning N ranks that each import torch is slow on a loaded CPU runner


def _collect(procs, results, n, timeout, tmp, on=None, go=None):
    # The record's window (record.py, _outside.py): `on("ready", pids)` once every rank joined the
    # group (the ranks wait for `go` until the hook has read its start), `on("values", pids)` once every value came, `on("done", pids)` once every rank has also
    # exited. A rank that sends its "ok" early (a forged message) does not close the window: traffic
    # and memory count until the rank processes are gone.
    # fn's timeout starts once every rank has joined the process group; startup has its own.
    deadline = time.monotonic() + STARTUP_S + timeout
    ready = set()
    values, errors = {}, {}
    first_error_at = None
    dead_since = {}
    while len(values) + len(errors) < n:
        try:
            rank, kind, payload = results.get(timeout=0.1)
            if kind == "ready":
                ready.add(rank)
                if len(ready) == n:
                    deadline = time.monotonic() + timeout
                    if on is not None:
                        on("ready", [p.pid for p in procs])
                    if go is not None:
                        go.set()
            elif kind == "ok":
                values[rank] = _loads(payload)
                if on is not None and len(values) == n:
                    on("values", [p.pid for p in procs])
            else:
                errors[rank] = pickle.loads(payload)
                first_error_at = first_error_at or time.monotonic()
            continue
        except queue_mod.Empty:
            pass
        now = time.monotonic()
        for rank, p in enumerate(procs):
            if p.exitcode is not None and rank not in values and rank not in errors:
                # A result may still be in the pipe right after exit: give it a moment.
                if now - dead_since.setdefault(rank, now) > 2.0:
                    errors[rank] = {"summary": f"rank {rank} exited with code {p.exitcode} without a result",
                                    "frames": [], "assertion": False, "traceback": "", "failure": None}
                    first_error_at = first_error_at or now
        if first_error_at and now - first_error_at > 5.0:
            break  # peers of a failed rank are likely blocked in a collective with it
        if now > deadline:
            return _timeout(procs, values, errors, n, timeout, tmp)
    if errors:
        rank, info = _pick_error(errors)
        others = sorted(set(errors) - {rank})
        tail = f" (ranks {others} failed too)" if others else ""
        return _raise(rank, info, tail)
    if on is not None:
        _await_exit(procs, deadline)
        on("done", [p.pid for p in procs])
    return [values[r] for r in range(n)]


EXIT_S = 20  # tear-down (destroy_process_group) after the last value, before the record's window closes


def _await_exit(procs, deadline):
    end = min(deadline, time.monotonic() + EXIT_S)
    for p in procs:
        p.join(max(0.0, end - time.monotonic()))


def _timeout(procs, values, errors, n, timeout, tmp):
    if errors:
        rank, info = _pick_error(errors)
        return _raise(rank, info)
    pending = [r for r in range(n) if r not in values]
    for r in pending:
        if procs[r].is_alive():
            try:
                os.kill(procs[r].pid, signal.SIGUSR1)
            except OSError:
                pass
    time.sleep(1.0)
    from .location import frames_in_workspace

    stacks = {r: _main_thread_frames(os.path.join(tmp, f"stack{r}.txt")) for r in pending}
    rank = next((r for r in pending if frames_in_workspace(stacks[r])), pending[0])
    frames = stacks[rank]
    text = "".join(f'  File "{f[0]}", line {f[1]}, in {f[2]}\n' for f in frames)
    summary = f"timeout after {timeout:g} s: ranks {pending} did not finish"
    raise RankError(f"{summary}\nrank {rank} was at:\n{text}", rank=rank, summary=summary,
                    tb=text, frames=frames, timed_out=True)
