"""ProcessGroup methods patched while a counter is active (reference-counted, undone by the last).

torch 1.13's gaps: methods whose c10d dispatcher op does not exist are counted here. Every torch: a
call on a thread without a counter while one is active elsewhere, or on the counter's thread outside
its dispatch mode, is described to the counters it was hidden from (`_hidden`)."""
from __future__ import annotations

import functools
import threading

import torch
import torch.distributed as dist

from . import _hidden, _wire
from ._pg_state import _counters, _tls, _total_sequence

_patched = {}   # (cls, name) -> original
_patch_users = 0
_patch_lock = threading.Lock()


def _has_dispatch_op(method: str) -> bool:
    op = _wire.DISPATCH_NAME.get(method)
    if op is None:
        return False
    try:
        getattr(torch.ops.c10d, op)
        return True
    except (AttributeError, RuntimeError):
        return False


def _pg_classes():
    seen, todo = [], [dist.ProcessGroup]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return seen


def _make_patch(name, original, counting):
    def patched(self, *args, **kwargs):
        counters = list(_counters())
        if not counters:
            others = _hidden.elsewhere(counters)
            result = original(self, *args, **kwargs)
            if others:  # issued on a thread the active counters do not watch
                _hidden.record(name, self, args, kwargs, others, "another thread")
            return result
        if getattr(_tls, "inside", False):
            return original(self, *args, **kwargs)
        _tls.inside, _tls.group, _tls.seen = True, self, False
        seq = _total_sequence() if counting else None
        try:
            result = original(self, *args, **kwargs)
        finally:
            _tls.inside, _tls.group = False, None
        if _tls.seen:
            return result
        if not counting:  # torch >= 2 routes every method through the dispatcher: not seen means hidden
            _hidden.record(name, self, args, kwargs, counters, "the counter's thread, outside its dispatch mode")
            return result
        # the dispatcher did not see it (no c10d op on this torch): count here
        for counter in counters:
            counter._issued_seen(seq)
        try:
            op, payload, wire = _wire.pg_bytes(name, list(args) + list(kwargs.values()),
                                               int(self.size()), int(self.rank()))
        except Exception as exc:
            for counter in counters:
                counter._uncounted(name, exc)
        else:
            for counter in counters:
                counter._add(op, payload, wire)
        return result

    patched.__name__ = name
    patched.__wrapped__ = original
    return patched


@functools.lru_cache(maxsize=None)
def _needs_patches() -> bool:
    # torch >= 2 routes every ProcessGroup method through c10d ops and can unbox the group.
    return getattr(dist.ProcessGroup, "unbox", None) is None or not all(
        _has_dispatch_op(m) for m in _wire.DISPATCH_NAME)


def _install_patches():
    global _patch_users
    with _patch_lock:
        _patch_users += 1
        if _patch_users > 1:
            return
        counting = _needs_patches()
        for cls in _pg_classes():
            for name in _wire.DISPATCH_NAME:
                original = cls.__dict__.get(name)
                if original is not None and (cls, name) not in _patched:
                    setattr(cls, name, _make_patch(name, original, counting))
                    _patched[(cls, name)] = original


def _remove_patches():
    global _patch_users
    with _patch_lock:
        _patch_users -= 1
        if _patch_users > 0:
            return
        for (cls, name), original in _patched.items():
            setattr(cls, name, original)
        _patched.clear()
