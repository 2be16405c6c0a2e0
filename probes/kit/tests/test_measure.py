import pytest
import torch

from probegate_probe import peak_memory, peak_memory_caveat, time_ratio

MIB = 1 << 20


def _allocate_and_free(mib):
    t = torch.ones(mib * MIB // 4)  # ones() touches every page, so RSS grows
    total = float(t[::4096].sum())
    del t
    return total


def test_peak_memory_sees_a_64_mib_allocation_on_cpu():
    _allocate_and_free(1)  # warm the allocator and torch's lazy init out of the measurement
    result, peak = peak_memory(_allocate_and_free, 64, device="cpu")
    assert result == 64 * MIB // 4 // 4096
    slack = 4 * MIB if peak_memory_caveat() is None else 64 * MIB
    # RSS is the whole process: other threads may release a little memory while fn runs.
    assert 64 * MIB - 2 * MIB <= peak <= 64 * MIB + slack, peak / MIB


def test_peak_memory_sees_a_block_that_reuses_freed_heap_memory():
    for _ in range(2):
        _allocate_and_free(24)  # glibc would now serve ≤ 24 MiB from memory still resident
    _, peak = peak_memory(_allocate_and_free, 16, device="cpu")
    assert 16 * MIB - 2 * MIB <= peak <= 20 * MIB, peak / MIB


def test_peak_memory_of_a_no_op_is_about_zero():
    result, peak = peak_memory(lambda x: x + 1, 41, device="cpu")
    assert result == 42
    assert 0 <= peak < 2 * MIB, peak / MIB


def test_peak_memory_passes_kwargs():
    (result, peak) = peak_memory(lambda a, b=0: a * b, 6, b=7, device="cpu")
    assert result == 42 and peak >= 0


def _work(units):
    total = 0
    for i in range(units * 20000):
        total += i * i
    return total


def test_time_ratio_of_identical_functions_is_about_one():
    r = time_ratio(lambda: _work(30), lambda: _work(30), repeats=15, warmup=2)
    assert 0.7 <= r.median <= 1.43, r.ratios  # long calls: a loaded 2-core runner preempts both alike
    assert r.passed and len(r.ratios) == 15 and r.margin == 1.25
    assert r.candidate_s > 0 and r.reference_s > 0
    if not torch.cuda.is_initialized():
        assert r.sm_clock_mhz is None
    assert set(r.measured()) >= {"ratio", "candidate_s", "reference_s", "margin", "repeats"}


def test_time_ratio_flags_three_times_the_work():
    r = time_ratio(lambda: _work(90), lambda: _work(30), repeats=9, warmup=1)
    assert r.median > 2.0, r.ratios
    assert not r.passed


def test_time_ratio_alternates_order_and_calls_sync():
    order, syncs = [], []
    time_ratio(lambda: order.append("c"), lambda: order.append("r"), repeats=4, warmup=1,
               sync=lambda: syncs.append(1))
    assert order == ["c", "r", "c", "r", "r", "c", "c", "r", "r", "c"]
    assert len(syncs) == len(order)


def test_time_ratio_rejects_zero_repeats():
    with pytest.raises(ValueError):
        time_ratio(lambda: None, lambda: None, repeats=0)
