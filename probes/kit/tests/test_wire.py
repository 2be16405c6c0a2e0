"""Byte rules per op (no processes), and the ProcessGroup-method path torch 1.13 needs."""
from fractions import Fraction

import pytest
import torch
import torch.distributed as dist

from probegate_probe import CollectiveCounter
from probegate_probe import _wire


def f32(n):
    return torch.empty(n)


@pytest.mark.parametrize("name, args, n, rank, expected", [
    ("allreduce", [[f32(100)]], 4, 0, ("all_reduce", 400, 600)),
    ("allreduce", [f32(100)], 2, 0, ("all_reduce", 400, 400)),  # single-tensor overload
    ("allreduce_coalesced", [[f32(10), f32(6)]], 2, 1, ("all_reduce", 64, 64)),
    ("allgather", [[[f32(8)] * 4], [f32(8)]], 4, 2, ("all_gather", 128, 96)),
    ("_allgather_base", [f32(32), f32(8)], 4, 0, ("all_gather", 128, 96)),
    ("allgather_coalesced", [[[f32(2), f32(2)]], [f32(2)]], 2, 0, ("all_gather", 16, 8)),
    ("reduce_scatter", [[f32(8)], [[f32(8)] * 4]], 4, 0, ("reduce_scatter", 128, 96)),
    ("_reduce_scatter_base", [f32(8), f32(32)], 4, 3, ("reduce_scatter", 128, 96)),
    ("broadcast", [[f32(5)]], 8, 3, ("broadcast", 20, 20)),
    ("reduce", [[f32(5)]], 8, 3, ("reduce", 20, 20)),
    ("send", [[f32(5)], 1, 0], 2, 0, ("send", 20, 20)),
    ("recv_anysource", [[f32(5)], 0], 2, 0, ("recv", 20, 20)),
    ("gather", [[[f32(4)] * 4], [f32(4)]], 4, 0, ("gather", 64, 48)),   # root receives 3 chunks
    ("gather", [[], [f32(4)]], 4, 1, ("gather", 64, 16)),               # others send one
    ("scatter", [[f32(4)], [[f32(4)] * 4]], 4, 0, ("scatter", 64, 48)),
    ("scatter", [[f32(4)], []], 4, 2, ("scatter", 64, 16)),
    ("alltoall_base", [f32(32), f32(32), [], []], 4, 1, ("all_to_all", 128, 96)),
    ("alltoall_base", [torch.empty(4, 8), torch.empty(4, 8), [3, 1], [1, 3]], 2, 0, ("all_to_all", 128, 96)),
    ("alltoall_base", [torch.empty(4, 8), torch.empty(4, 8), [1, 3], [1, 3]], 2, 1, ("all_to_all", 128, 32)),
    ("alltoall", [[f32(2)] * 2, [f32(1), f32(3)]], 2, 0, ("all_to_all", 16, 12)),
    ("barrier", [], 4, 0, ("barrier", 0, 0)),
    ("monitored_barrier", [], 4, 0, ("barrier", 0, 0)),
])
def test_pg_bytes(name, args, n, rank, expected):
    op, payload, wire = _wire.pg_bytes(name, args, n, rank)
    assert (op, payload, wire) == (expected[0], expected[1], Fraction(expected[2]))


def test_dispatcher_layout_puts_the_group_after_the_tensors():
    pg = object()
    op, payload, wire = _wire.pg_bytes("alltoall_base", [f32(32), f32(32), pg, [], [], 100], 4, 0)
    assert (op, payload, wire) == ("all_to_all", 128, 96)
    assert _wire.dispatch_rule("c10d::allreduce_") == ("c10d", "allreduce")
    assert _wire.dispatch_rule("c10d::recv_any_source_") == ("c10d", "recv_anysource")
    assert _wire.dispatch_rule("_c10d_functional::all_gather_into_tensor") == ("functional", "all_gather_into_tensor")
    assert _wire.dispatch_rule("aten::add") is None and _wire.dispatch_rule("_c10d_functional::wait_tensor") is None


def test_functional_bytes():
    assert _wire.functional_bytes("all_reduce", [f32(100), "sum", "0"], 4, 0) == ("all_reduce", 400, 600)
    assert _wire.functional_bytes("all_gather_into_tensor", [f32(8), 4, "0"], 4, 0) == ("all_gather", 128, 96)
    assert _wire.functional_bytes("reduce_scatter_tensor", [f32(32), "sum", 4, "0"], 4, 0) == ("reduce_scatter", 128, 96)
    assert _wire.functional_bytes("all_to_all_single", [torch.empty(4, 8), [3, 1], [1, 3], "0"], 2, 0) == \
        ("all_to_all", 128, 96)


class _Loopback(dist.ProcessGroup):
    """A one-process stand-in group: its methods have no dispatcher op, like 1.13's gaps."""

    def _allgather_base(self, output, inp, opts=None):
        output.copy_(inp.repeat(self.size()))

    def _reduce_scatter_base(self, output, inp, opts=None):
        output.copy_(inp[: output.numel()] * self.size())


@pytest.mark.skipif(CollectiveCounter().mode != "dispatch+pg-methods",
                    reason="torch routes every ProcessGroup method through the dispatcher")
def test_methods_without_a_dispatcher_op_are_counted_once_on_the_group():
    pg = _Loopback(0, 4)
    with CollectiveCounter() as c:
        pg._allgather_base(torch.empty(32), torch.ones(8))
        pg._reduce_scatter_base(torch.empty(8), torch.ones(32))
    assert c.by_op == {"all_gather": 96, "reduce_scatter": 96}
    assert c.calls == {"all_gather": 1, "reduce_scatter": 1} and c.uncounted == []
    assert "_allgather_base" in c.note
    pg._allgather_base(torch.empty(32), torch.ones(8))  # after exit: the method is the original again
    assert c.calls == {"all_gather": 1, "reduce_scatter": 1}
