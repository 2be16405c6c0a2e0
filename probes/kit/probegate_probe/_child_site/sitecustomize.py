"""Started in every Python process a test starts outside multiprocessing (subprocess, torchrun and its
workers) while `spawn_meter.metering()` is active: that window puts this folder first on PYTHONPATH and
the meter's settings in the environment.

It imports nothing heavy here: it waits until `import torch` has finished (torch imports
`torch.distributed` half-way through its own import, too early to start anything) and only then starts
the kit's meters in the process (`_child_meter.start`). A process that never imports torch costs a few
microseconds. multiprocessing's own children (spawn, forkserver, the resource tracker) are left alone:
`spawn_meter.MeteredTarget` meters those targets. A sitecustomize further along sys.path still runs.
"""
import importlib
import importlib.abc
import importlib.util
import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_KIT = os.path.basename(os.path.dirname(_HERE))  # the kit's package name in this evaluation
_ROOT = os.path.dirname(os.path.dirname(_HERE))
_VAR = f"_{_KIT.upper()}_CHILD"


def _multiprocessing_child() -> bool:
    argv = list(getattr(sys, "orig_argv", ()))
    return any(a == "-c" and i + 1 < len(argv) and argv[i + 1].lstrip().startswith("from multiprocessing.")
               for i, a in enumerate(argv))


class _Loader(importlib.abc.Loader):
    def __init__(self, inner, then):
        self.inner, self.then = inner, then

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        self.then()


class _AfterTorch(importlib.abc.MetaPathFinder):
    """Runs `then` once, right after `import torch` has finished."""

    def __init__(self, then):
        self.then, self.busy = then, False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.busy = False
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader, self.then)
        return spec


def _start(conf):
    def then():
        try:
            if _ROOT not in sys.path:
                sys.path.append(_ROOT)
            importlib.import_module(f"{_KIT}._child_meter").start(conf)
        except Exception as exc:  # the meter must never break the process it meters
            print(f"[meter] not started in pid {os.getpid()}: {type(exc).__name__}: {exc}", file=sys.stderr)
    return then


def _install():
    raw = os.environ.get(_VAR)
    if not raw or _multiprocessing_child():
        return
    try:
        conf = json.loads(raw)
    except ValueError:
        return
    if "torch" in sys.modules:
        _start(conf)()
    else:
        sys.meta_path.insert(0, _AfterTorch(_start(conf)))


def _chain():
    """The next sitecustomize on sys.path (a repository's or an environment's own) still runs."""
    me = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    try:
        importlib.import_module("sitecustomize")
    except ImportError:
        if me is not None:
            sys.modules["sitecustomize"] = me
    finally:
        sys.path[:] = saved + [p for p in sys.path if p not in saved]


_install()
_chain()
