"""The kit's meters in a process a test started outside multiprocessing (`subprocess`, a torchrun-style
launcher and the workers it starts), begun by `_child_site/sitecustomize.py` right after the process's
`import torch` finished, and written when it exits.

The record has `spawn_meter.MeteredTarget`'s shape, so `spawn_meter.read_records` returns it with the
rest: collectives and bytes (a CollectiveCounter from then on, the same dispatcher-level figures),
and the peak resident memory above the footprint the process had once torch was imported (VmHWM
against VmRSS, the high-water mark reset then, as `peak_memory` does). Written from `atexit`: a process
that ends through `os._exit` or a signal writes nothing, and its parent sees one record fewer.
"""
from __future__ import annotations

import atexit
import os
import sys
import time

from . import memory as _memory
from . import spawn_meter

_state = {}


def start(conf) -> None:
    """Meter this process from now until it exits; `conf`: {"folder", "label", "tree"}."""
    if _state or spawn_meter.in_metered_target():
        return
    from .collectives import CollectiveCounter

    _memory._fresh_pages_for_large_blocks()
    exact = _memory._reset_hwm()
    counter = CollectiveCounter()
    counter.__enter__()
    _state.update(conf=conf, counter=counter, exact=exact, rss=_memory._status_kib("VmRSS"), t0=time.perf_counter(), exit=None)
    hook = sys.excepthook

    def excepthook(kind, value, tb):
        _state["exit"] = f"{kind.__name__}: {value}"[:500]
        hook(kind, value, tb)

    sys.excepthook = excepthook
    atexit.register(_finish)


def _finish() -> None:
    from .differential import traffic_figures

    conf, counter = _state["conf"], _state["counter"]
    record = {"label": conf["label"], "pid": os.getpid(), "exit": _state["exit"], "launched": "subprocess",
              "argv": list(getattr(sys, "orig_argv", sys.argv))[:8],
              "seconds": time.perf_counter() - _state["t0"]}
    peak = max(0, _memory._status_kib("VmHWM") - _state["rss"]) * 1024
    record["peak"] = peak if _state["exact"] else None
    try:
        counter.__exit__(None, None, None)
        record.update(traffic_figures(counter, conf.get("tree")))
    except Exception as exc:  # the figures must never hide the process's own outcome
        record["gaps"] = [f"figures: {type(exc).__name__}: {exc}"]
    try:
        spawn_meter._write(conf["folder"], record)
    except OSError as exc:
        print(f"[meter] record of pid {os.getpid()} not written: {exc}", file=sys.stderr)
