"""The rank server: how run_ranks starts its ranks, and what it preloads for them (a forkserver
that imports torch, the kit and a probe's `preload` once; spawn when asked or where there is none)."""
from __future__ import annotations

import os
import re

from . import _conf

_START_ENV = "PROBEGATE_START_METHOD"


def _context(preload=()):
    """A forkserver that has imported torch (and `preload`) once (fast ranks on a 2-core CI
    runner), else spawn.

    Both start ranks from a process that never touched CUDA or a process group, and both
    import the probe's __main__ as __mp_main__ in each rank. $PROBEGATE_START_METHOD=spawn
    forces spawn (then `preload` is imported by each rank as it needs it, as without it).
    """
    import multiprocessing

    method = _conf.get(_START_ENV) or (
        "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn")
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["torch", "torch.distributed", __package__, *preload])
    return ctx


def _check_preload(preload) -> tuple:
    """The names of `preload`, refused when one is the submission's (a module under the workspace)."""
    if isinstance(preload, str):
        raise TypeError(f"preload takes a list of module names, got the string {preload!r}")
    names = tuple(preload or ())
    from importlib.machinery import PathFinder

    from .location import workspace

    root = str(workspace())
    for name in names:
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", name):
            raise ValueError(f"preload: {name!r} is not a module name")
        # The path finder itself, not the import system: the guard's finder would take a lookup of
        # a workspace module for the submission's import and hide the probe here.
        spec = PathFinder.find_spec(name.split(".")[0])
        places = [spec.origin] if spec is not None and spec.origin else list(getattr(spec, "submodule_search_locations", None) or [])
        if any(p and os.path.realpath(p).startswith(root + os.sep) for p in places):
            raise ValueError(
                f"preload: {name!r} is the submission's code (under {root}): preloaded modules are imported in the "
                "rank server before the guard hides the probe, so the submission would run where it can tell it is "
                "probed; preload only packages of the task's environment")
    return names
