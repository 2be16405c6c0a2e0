"""What the collective counter keeps per thread and reads of the process groups: the counters active
on this thread, the group a call went to (size and rank, from a ProcessGroup, a dispatcher
ScriptObject or a functional collective's group name), and the groups' sequence numbers, which tell
a collective the counter saw from one it did not."""
from __future__ import annotations

import threading

import torch.distributed as dist

_tls = threading.local()


def _counters() -> list:
    if not hasattr(_tls, "counters"):
        _tls.counters = []
    return _tls.counters


def _group_info(obj):
    """(size, rank) of a process group given as a ProcessGroup or a dispatcher ScriptObject."""
    for candidate in (obj, _unbox(obj)):
        if candidate is not None and callable(getattr(candidate, "size", None)):
            try:
                return int(candidate.size()), int(candidate.rank())
            except Exception:
                pass
    group = getattr(_tls, "group", None)  # set by the ProcessGroup method that led here
    if group is not None:
        return int(group.size()), int(group.rank())
    return dist.get_world_size(), dist.get_rank()  # a C++ caller on torch 1.13: assume WORLD


def _unbox(obj):
    unbox = getattr(dist.ProcessGroup, "unbox", None)
    if unbox is None or isinstance(obj, dist.ProcessGroup):
        return None
    try:
        return unbox(obj)
    except Exception:
        return None


def _functional_group(args):
    # group_name is the last string argument (a reduce op, when there is one, comes before it).
    name = next((a for a in reversed(args) if isinstance(a, str)), None)
    if name is not None:
        resolve = getattr(dist.distributed_c10d, "_resolve_process_group", None)
        if resolve is not None:
            try:
                return _group_info(resolve(name))
            except Exception:
                pass
    size = next((a for a in args[1:] if isinstance(a, int) and not isinstance(a, bool)), None)
    return (size or dist.get_world_size()), dist.get_rank()


def _groups() -> list:
    """Every process group this process created (WORLD and subgroups)."""
    c10d = dist.distributed_c10d
    world = getattr(c10d, "_world", None)
    pg_map = getattr(world, "pg_map", None) if world is not None else None
    if pg_map is None:
        pg_map = getattr(c10d, "_pg_map", {})
    return [g for g in list(pg_map) if g is not None]


def _total_sequence():
    """The sum of every group's sequence number (None where the backend keeps none)."""
    numbers = _sequence_numbers()
    return sum(seq for _, seq in numbers.values()) if numbers else None


def _sequence_numbers() -> dict:
    """id(group) -> (group, collectives issued on it so far), where the backend keeps count."""
    out = {}
    try:
        if not (dist.is_available() and dist.is_initialized()):
            return out
        groups = _groups()
    except Exception:
        return out
    for g in groups:
        try:
            out[id(g)] = (g, int(g._get_sequence_number_for_group()))
        except Exception:  # a backend without sequence numbers: nothing to compare
            pass
    return out
