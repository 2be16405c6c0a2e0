"""Checks of the CUDA paths; they run on a GPU runner and skip elsewhere."""
import pytest
import torch

from probegate_probe import peak_memory, time_ratio

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
MIB = 1 << 20


def test_peak_memory_on_cuda_is_the_allocator_peak():
    torch.ones(1, device="cuda")  # context and allocator up before measuring

    def allocate():
        t = torch.empty(64 * MIB // 4, device="cuda")
        del t

    _, peak = peak_memory(allocate, device="cuda")
    assert peak == 64 * MIB
    _, idle = peak_memory(lambda: None, device="cuda")
    assert idle == 0


def test_time_ratio_on_cuda():
    a = torch.randn(2048, 2048, device="cuda")

    def mm(k):
        for _ in range(k):
            a @ a

    same = time_ratio(lambda: mm(4), lambda: mm(4), repeats=11)
    assert 0.8 <= same.median <= 1.25, same.ratios
    more = time_ratio(lambda: mm(12), lambda: mm(4), repeats=11)
    assert more.median > 2.0, more.ratios
    try:
        import pynvml  # noqa: F401
    except ImportError:
        assert more.sm_clock_mhz is None
    else:
        assert more.sm_clock_mhz is None or more.sm_clock_mhz > 0
