"""Where each counted collective was called from (#37 item 7): per collective and call site, the calls
and wire bytes, so a traffic failure can name the `path:line in function` of a collective the head
calls where the base does not.

A call site is the innermost frame that is neither the kit, torch, the standard library nor an
installed package (site-packages, dist-packages), preferring one inside the counter's `root` (the
gated tree: differential() runs each side with its tree as the current folder). It is one walk up the
stack per counted call, with each file's kind cached: no stack is kept, only a tally per distinct
(collective, file, line, function), at most LIMIT of them per counter (the rest are still counted,
just not placed)."""
from __future__ import annotations

import os
import sys
import sysconfig

import torch

_KIT = os.path.dirname(os.path.abspath(__file__)) + os.sep
_TORCH = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_STDLIB = tuple({p + os.sep for k in ("stdlib", "platstdlib") for p in (sysconfig.get_paths()[k], os.path.realpath(sysconfig.get_paths()[k]))})
_library = {}  # filename -> True when it is the kit, torch, the standard library or an installed package
_real = {}  # filename -> its realpath
LIMIT = 64


def _realpath(name: str) -> str:
    real = _real.get(name)
    if real is None:
        real = _real[name] = os.path.realpath(name)
    return real


def _is_library(name: str) -> bool:
    known = _library.get(name)
    if known is None:
        known = (name.startswith(("<", _KIT, _TORCH) + _STDLIB) or "/site-packages/" in name or "/dist-packages/" in name
                 or _realpath(name).startswith((_KIT, _TORCH)))
        _library[name] = known
    return known


def caller(root=None):
    """(file, line, function) of the code that issued the collective being counted, or None (a call
    from C++ with no Python frame of its own, e.g. on an autograd device thread)."""
    f = sys._getframe(1)
    first = None
    top = (_realpath(str(root)).rstrip(os.sep) + os.sep) if root else None
    while f is not None:
        name = f.f_code.co_filename
        if not _is_library(name):
            if first is None:
                first = f
            if top is None or _realpath(name).startswith(top):
                return name, f.f_lineno, f.f_code.co_name
        f = f.f_back
    return (first.f_code.co_filename, first.f_lineno, first.f_code.co_name) if first is not None else None


def note(tally: dict, op: str, wire, root=None) -> None:
    """Adds one call of `op` moving `wire` bytes to its call site's tally."""
    try:
        where = caller(root)
    except Exception:  # placing a call must never break the count
        where = None
    key = (op,) + (where or ("", 0, ""))
    entry = tally.get(key)
    if entry is None:
        if len(tally) >= LIMIT:
            return
        entry = tally[key] = [0, 0]
    entry[0] += 1
    entry[1] += wire


def figures(tally: dict, tree=None) -> list:
    """The tally as plain dicts (they travel from the ranks): op, path (relative to `tree` when inside
    it), line, func, calls, bytes."""
    top = os.path.realpath(str(tree)) if tree else None
    out = []
    for (op, file, line, func), (calls, nbytes) in tally.items():
        path = file
        if file and top:
            real = os.path.realpath(file)
            if real.startswith(top + os.sep):
                path = os.path.relpath(real, top)
        out.append({"op": op, "path": path, "line": line, "func": func, "calls": calls, "bytes": int(round(nbytes))})
    return out
