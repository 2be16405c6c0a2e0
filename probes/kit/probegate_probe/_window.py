"""What a timed call's window waits for (issue 29): the threads and child processes the call started,
and a plain result (a tensor subclass, a lazy or pending result, is forced inside the window)."""
from __future__ import annotations

import os
import threading
import time
from typing import List


def _child_pids() -> set:
    """Children of this process (every thread's), from /proc; empty where /proc does not say."""
    pids = set()
    try:
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/children") as fh:
                    pids.update(int(p) for p in fh.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return pids


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _plain(value):
    """A plain tensor with the values of `value`: through the subclass's own __torch_function__
    (clone), so a lazy or pending result does what it deferred; `as_subclass` is no torch function
    (1.13 hands it the buffer as it is)."""
    import torch

    if type(value) in (torch.Tensor, torch.nn.Parameter):
        return value
    out = torch.Tensor.clone(value)
    return torch.Tensor.as_subclass(out, torch.Tensor) if isinstance(out, torch.Tensor) else out


def _materialize(value, depth=0):
    """Forces a result into plain values inside the timed window: a tensor subclass (a lazy or
    pending result) is turned into a plain tensor, which runs whatever it deferred."""
    if depth > 4:
        return
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and isinstance(value, torch.Tensor):
        _plain(value)
        return
    if isinstance(value, (list, tuple)):
        for v in list(value)[:64]:
            _materialize(v, depth + 1)
    elif isinstance(value, dict):
        for v in list(value.values())[:64]:
            _materialize(v, depth + 1)


class _Settle:
    """What a call left running: threads and child processes it started, waited for in the window."""

    def __init__(self):
        self.threads = set(threading.enumerate())
        self.children = _child_pids()

    def wait(self, deadline: float) -> List[str]:
        """Waits for them until `deadline` (monotonic); returns what was still running then."""
        left = []
        for t in threading.enumerate():
            if t not in self.threads and t is not threading.current_thread():
                t.join(max(0.0, deadline - time.monotonic()))
                if t.is_alive():
                    left.append(f"thread {t.name!r}")
        for pid in _child_pids() - self.children:
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.001)
            if _alive(pid):
                left.append(f"process {pid}")
        return left
