"""Collectives and peak memory of the processes code under test starts itself.

A repository's distributed tests start their own ranks (`torch.multiprocessing.spawn`, `mp.spawn`,
`multiprocessing.Process(target=…)`, any start method): a CollectiveCounter in the test's process
never sees their collectives, and its peak memory never sees theirs. While `metering()` is active,
every process started through `multiprocessing` runs its target wrapped in `MeteredTarget`, which
counts the child's collectives (CollectiveCounter: dispatcher-level, the same figures as
`differential()`'s ranks) and its peak memory (`peak_memory`), and writes them as one JSON file into
a folder the parent reads afterwards (`read_records`).

Processes started outside `multiprocessing` (`subprocess`, `torchrun` and the workers it starts) are
metered too: while active, this folder's `_child_site` is first on PYTHONPATH, and its sitecustomize
starts `_child_meter` in each Python process that imports torch; their records land in the same
folder. Not seen: a process started with `-I`, `-E` or `-S`, or with an environment of its own that
drops PYTHONPATH; `Process` subclasses that override `run()` instead of passing a target. A child
killed before it is done writes nothing; `read_records` then has fewer children than were started.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
from multiprocessing import process as _mp_process

_lock = threading.Lock()
_active = None  # {"folder", "label", "tree"} while metering
_original_start = None
_in_target = False  # this process runs a MeteredTarget: a process meter of its own would count it twice
_KIT = __name__.rsplit(".", 1)[0]
CHILD_SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child_site")
CHILD_VAR = f"_{_KIT.upper()}_CHILD"  # _child_site/sitecustomize.py derives the same name from its path


def in_metered_target() -> bool:
    return _in_target


class MeteredTarget:
    """A Process target run under the kit's meters in the child; module-level, so it pickles by
    reference (spawn and forkserver children import this module to unpickle it)."""

    def __init__(self, target, folder, label, tree):
        self.target = target
        self.folder = folder
        self.label = label
        self.tree = tree

    def __call__(self, *args, **kwargs):
        global _in_target
        _in_target = True
        from .collectives import CollectiveCounter
        from .differential import traffic_figures
        from .memory import peak_memory

        record = {"label": self.label, "pid": os.getpid(), "peak": None, "exit": None}
        counter = CollectiveCounter()
        started = time.perf_counter()
        try:
            with counter:
                result, record["peak"] = peak_memory(self.target, *args, **kwargs)
            return result
        except SystemExit as exc:  # torch's spawn wrapper reports a failing rank with sys.exit(1)
            record["exit"] = exc.code
            raise
        except BaseException as exc:
            record["exit"] = f"{type(exc).__name__}: {exc}"[:500]
            raise
        finally:
            record["seconds"] = time.perf_counter() - started
            try:
                record.update(traffic_figures(counter, self.tree))
            except Exception as exc:  # the figures must never hide the child's own outcome
                record["gaps"] = [f"figures: {type(exc).__name__}: {exc}"]
            _write(self.folder, record)


def _write(folder, record) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".child-", dir=folder)
    with os.fdopen(fd, "w") as fh:
        json.dump(record, fh, default=str)
    os.rename(tmp, os.path.join(folder, f"child-{os.getpid()}-{time.monotonic_ns()}.json"))


def _start(self):
    conf = _active
    target = getattr(self, "_target", None)
    if conf is not None and target is not None and not isinstance(target, MeteredTarget):
        self._target = MeteredTarget(target, conf["folder"], conf["label"], conf["tree"])
    return _original_start(self)


@contextlib.contextmanager
def metering(folder, label, tree=None):
    """Processes started through multiprocessing while active are metered; their records, tagged
    with `label`, land in `folder`. `tree`: the root hidden collectives' places are said relative to."""
    global _active, _original_start
    with _lock:
        if _active is not None:
            raise RuntimeError("spawn_meter.metering() is already active in this process")
        _original_start = _mp_process.BaseProcess.start
        _mp_process.BaseProcess.start = _start
        _active = {"folder": folder, "label": label, "tree": tree}
        saved = {k: os.environ.get(k) for k in ("PYTHONPATH", CHILD_VAR)}
        os.environ["PYTHONPATH"] = os.pathsep.join([CHILD_SITE] + ([saved["PYTHONPATH"]] if saved["PYTHONPATH"] else []))
        os.environ[CHILD_VAR] = json.dumps(_active)
    try:
        yield
    finally:
        with _lock:
            _mp_process.BaseProcess.start = _original_start
            _active = None
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def read_records(folder) -> list:
    """Every child's record in `folder`, oldest first."""
    out = []
    for name in sorted(os.listdir(folder)):
        if name.startswith("child-") and name.endswith(".json"):
            with open(os.path.join(folder, name)) as fh:
                out.append(json.load(fh))
    return out
