"""Collectives issued where the counter does not look, described where they pass through Python (issue
29; #38 item 4). The process groups' sequence numbers say how many there were (`CollectiveCounter.
hidden`); a `ProcessGroup` method called on a thread with no counter of its own while a counter is
active elsewhere, or on the counter's thread with its dispatch mode disabled, also says which
collective, how many bytes, on which thread and from which line. Functional collectives and calls
from C++ on another thread stay a count only."""
from __future__ import annotations

import os
import sys
import sysconfig
import threading

from . import _wire

_KIT = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STDLIB = tuple({p + os.sep for k in ("stdlib", "platstdlib") for p in (sysconfig.get_paths()[k], os.path.realpath(sysconfig.get_paths()[k]))})
_active = []  # every counter active in this process, whichever thread it counts
_lock = threading.Lock()
LIMIT = 100  # calls described per counter; the count itself is never capped


def enter(counter) -> None:
    with _lock:
        _active.append(counter)


def leave(counter) -> None:
    with _lock:
        if counter in _active:
            _active.remove(counter)


def elsewhere(mine) -> list:
    """The counters active on other threads than the one holding `mine`."""
    if not _active:
        return []
    with _lock:
        return [c for c in _active if c not in mine]


def _origin():
    """(file, line) of the innermost frame that is neither the kit, the standard library nor an
    installed package (site-packages, dist-packages): the code that issued the call. None where there
    is none, e.g. a thread whose target is torch's own `dist.all_reduce`."""
    f = sys._getframe(3)
    while f is not None:
        name = f.f_code.co_filename
        if not (name.startswith(("<", _KIT) + _STDLIB) or "/site-packages/" in name or "/dist-packages/" in name):
            return name, f.f_lineno
        f = f.f_back
    return None


def record(name, pg, args, kwargs, counters, how: str) -> None:
    """Describes a ProcessGroup call the counters in `counters` did not see to each of them."""
    try:
        size, rank = int(pg.size()), int(pg.rank())
    except Exception:
        size, rank = None, None
    call = {"op": name, "bytes": None, "group_size": size, "thread": threading.current_thread().name, "how": how}
    try:
        op, _, wire = _wire.pg_bytes(name, list(args) + list(kwargs.values()), size or 1, rank or 0)
        call.update(op=op, bytes=int(round(wire)))
    except Exception:  # an overload the rules do not know: the op's name is still worth saying
        pass
    where = _origin()
    if where is not None:
        call.update(file=where[0], line=where[1])
    for counter in counters:
        if len(counter.hidden_calls) < LIMIT:
            counter.hidden_calls.append(dict(call))


def where(call, root=None) -> str:
    """`path:line` of a described call, relative to `root` (the tree it came from) when inside it."""
    file = call.get("file")
    if not file:
        return ""
    if root:
        real, top = os.path.realpath(file), os.path.realpath(str(root))
        if real.startswith(top + os.sep):
            file = os.path.relpath(real, top)
    return f"{file}:{call.get('line', 1)}"


def describe(call, root=None) -> str:
    """`all_reduce of 256 B (group of 2) on thread 'Thread-1 (all_reduce)' at lib.py:9`."""
    size = f"{call['bytes']:,} B" if call.get("bytes") is not None else "unsized"
    group = f" (group of {call['group_size']})" if call.get("group_size") else ""
    at = call.get("at") or where(call, root)
    return f"{call['op']} of {size}{group} on thread {call.get('thread')!r}{f' at {at}' if at else ''}"
