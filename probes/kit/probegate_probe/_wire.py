"""Algorithmic wire bytes per rank for each collective (PROBES.md), from its arguments.

Arguments arrive either as a ProcessGroup method's (1.13 Python bindings, several overloads) or
as a c10d dispatcher op's; both put outputs before inputs, which is all these rules rely on.
"""
from __future__ import annotations

from fractions import Fraction

import torch

# ProcessGroup method -> c10d dispatcher op
DISPATCH_NAME = {
    "allreduce": "allreduce_", "allreduce_coalesced": "allreduce_coalesced_",
    "allgather": "allgather_", "_allgather_base": "_allgather_base_",
    "allgather_coalesced": "allgather_coalesced_",
    "allgather_into_tensor_coalesced": "allgather_into_tensor_coalesced_",
    "reduce_scatter": "reduce_scatter_", "_reduce_scatter_base": "_reduce_scatter_base_",
    "reduce_scatter_tensor_coalesced": "reduce_scatter_tensor_coalesced_",
    "broadcast": "broadcast_", "reduce": "reduce_", "gather": "gather_", "scatter": "scatter_",
    "alltoall": "alltoall_", "alltoall_base": "alltoall_base_",
    "send": "send", "recv": "recv_", "recv_anysource": "recv_any_source_",
    "barrier": "barrier", "monitored_barrier": "monitored_barrier_",
}
_FROM_DISPATCH = {v: k for k, v in DISPATCH_NAME.items()}

_FUNCTIONAL = {  # _c10d_functional op -> (kind, S is input × group size)
    "all_reduce": ("all_reduce", False), "all_reduce_": ("all_reduce", False),
    "all_reduce_coalesced": ("all_reduce", False), "all_reduce_coalesced_": ("all_reduce", False),
    "all_gather_into_tensor": ("all_gather", True), "all_gather_into_tensor_out": ("all_gather", True),
    "all_gather_into_tensor_coalesced": ("all_gather", True),
    "reduce_scatter_tensor": ("reduce_scatter", False),
    "reduce_scatter_tensor_coalesced": ("reduce_scatter", False),
    "all_to_all_single": ("all_to_all", False),
    "broadcast": ("broadcast", False), "broadcast_": ("broadcast", False),
}


def dispatch_rule(schema_name: str):
    """(namespace, name) for a collective dispatcher op, None for everything else."""
    namespace, _, name = schema_name.partition("::")
    if namespace == "c10d" and name in _FROM_DISPATCH:
        return ("c10d", _FROM_DISPATCH[name])
    if namespace in ("_c10d_functional", "_c10d_functional_autograd", "c10d_functional") \
            and name in _FUNCTIONAL:
        return ("functional", name)
    return None


def nbytes(x) -> int:
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(nbytes(v) for v in x)
    return 0


def _tensor_args(flat):
    return [a for a in flat if isinstance(a, torch.Tensor)
            or (isinstance(a, (list, tuple)) and a and _has_tensor(a))
            or (isinstance(a, (list, tuple)) and not a)]


def _has_tensor(seq) -> bool:
    return any(isinstance(v, torch.Tensor) or (isinstance(v, (list, tuple)) and _has_tensor(v)) for v in seq)


def _int_lists(flat):
    return [a for a in flat if isinstance(a, (list, tuple)) and all(isinstance(v, int) for v in a)
            and not _has_tensor(a)]


def _even(kind, size, n):
    if kind == "all_reduce":
        return Fraction(2 * (n - 1) * size, n)
    return Fraction((n - 1) * size, n)


def _all_to_all(inp, payload, splits, n, rank):
    if isinstance(inp, (list, tuple)):  # list form: one tensor per peer
        own = nbytes(inp[rank]) if 0 <= rank < len(inp) else Fraction(payload, n)
        return payload - own
    if splits and isinstance(inp, torch.Tensor) and inp.dim() > 0 and inp.shape[0]:
        row = Fraction(payload, inp.shape[0])
        return payload - row * splits[rank] if rank < len(splits) else _even("all_to_all", payload, n)
    return _even("all_to_all", payload, n)


def pg_bytes(name, flat, n, rank):
    """(op, payload S, wire bytes) for a ProcessGroup method / c10d op named `name`."""
    tensors = _tensor_args(flat)
    first = tensors[0] if tensors else None
    second = tensors[1] if len(tensors) > 1 else None
    if name in ("barrier", "monitored_barrier"):
        return "barrier", 0, Fraction(0)
    if name in ("allreduce", "allreduce_coalesced"):
        s = nbytes(first)
        return "all_reduce", s, _even("all_reduce", s, n)
    if name in ("allgather", "_allgather_base", "allgather_coalesced", "allgather_into_tensor_coalesced"):
        s = nbytes(first)
        return "all_gather", s, _even("all_gather", s, n)
    if name in ("reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor_coalesced"):
        s = nbytes(second)
        return "reduce_scatter", s, _even("reduce_scatter", s, n)
    if name in ("broadcast", "reduce", "send"):
        s = nbytes(first)
        return name, s, Fraction(s)
    if name in ("recv", "recv_anysource"):
        s = nbytes(first)
        return "recv", s, Fraction(s)
    if name == "gather":  # outputs are empty except on the root
        chunk = nbytes(second)
        root = nbytes(first) > 0
        return "gather", n * chunk, Fraction((n - 1) * chunk if root else chunk)
    if name == "scatter":  # inputs are empty except on the source
        chunk = nbytes(first)
        src = nbytes(second) > 0
        return "scatter", n * chunk, Fraction((n - 1) * chunk if src else chunk)
    if name in ("alltoall", "alltoall_base"):
        s = nbytes(second)
        splits = _int_lists(flat)
        in_splits = list(splits[1]) if len(splits) > 1 else None
        return "all_to_all", s, Fraction(_all_to_all(second, s, in_splits, n, rank))
    raise KeyError(name)


def functional_bytes(name, flat, n, rank):
    kind, times_group = _FUNCTIONAL[name]
    s = nbytes(flat[0]) * (n if times_group else 1)
    if kind == "broadcast":
        return kind, s, Fraction(s)
    if kind == "all_to_all":
        in_splits = list(flat[2]) if len(flat) > 2 and isinstance(flat[2], (list, tuple)) and flat[2] else None
        return kind, s, Fraction(_all_to_all(flat[0], s, in_splits, n, rank))
    return kind, s, _even(kind, s, n)
