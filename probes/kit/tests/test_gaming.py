"""The kit's defences against submissions that game it (issue 29): hidden collectives, work left
running after a timed call, cached or probe-shaped answers to repeated inputs."""
import threading
import time

import pytest
import torch
import torch.distributed as dist

from probegate_probe import CollectiveCounter, ProbeFailure, run_ranks, time_ratio


def _hidden_on_a_thread(rank, n):
    t = torch.ones(64)
    with CollectiveCounter() as plain:
        dist.all_reduce(t)
    with CollectiveCounter() as gamed:
        dist.all_reduce(t)
        helper = threading.Thread(target=dist.all_reduce, args=(torch.ones(64),))
        helper.start()
        helper.join()
    return plain.hidden, list(plain.uncounted), gamed.hidden, list(gamed.uncounted), gamed.total_bytes, gamed.hidden_calls


def test_collectives_issued_where_the_counter_does_not_look_are_reported():
    plain_hidden, plain_uncounted, hidden, uncounted, total, calls = run_ranks(_hidden_on_a_thread, world_size=2)[0]
    assert (plain_hidden, plain_uncounted) == (0, [])
    assert hidden == 1 and total == 256, (hidden, total)
    assert "1 collective(s) not seen by the counter" in uncounted[0], uncounted
    # What passed through a ProcessGroup method on the helper thread is described: op, bytes, group, thread.
    assert [(c["op"], c["bytes"], c["group_size"], c["how"]) for c in calls] == [("all_reduce", 256, 2, "another thread")], calls
    assert "seen passing through Python: all_reduce of 256 B (group of 2) on thread 'Thread-" in uncounted[0], uncounted


def _hidden_with_the_mode_disabled(rank, n):
    from torch.utils._python_dispatch import _disable_current_modes

    with CollectiveCounter() as counter:
        with _disable_current_modes():
            dist.all_reduce(torch.ones(8))
    return counter.hidden, counter.hidden_calls, counter.total_bytes


@pytest.mark.skipif(not hasattr(dist.ProcessGroup, "unbox"), reason="torch 1.13 counts a ProcessGroup method the dispatcher did not see itself")
def test_a_collective_outside_the_dispatch_mode_on_the_counters_thread_is_described():
    hidden, calls, total = run_ranks(_hidden_with_the_mode_disabled, world_size=2)[0]
    assert hidden == 1 and total == 0, (hidden, total)
    assert [(c["op"], c["bytes"], c["how"]) for c in calls] == [("all_reduce", 32, "the counter's thread, outside its dispatch mode")], calls
    assert calls[0]["file"] == __file__, calls


def NO_WAIT():
    """Run-queue wait unknown: the ratio is judged as measured, contended or not (this box is shared)."""
    return None


def _slow(v):
    time.sleep(0.1)  # a lower bound that holds however loaded the runner is
    return v / v.abs().sum()


def _reference(v):
    return v / v.abs().sum()


def test_a_thread_left_running_is_inside_the_timed_window():
    x = torch.ones(1000)

    def candidate():
        worker = threading.Thread(target=_slow, args=(x,))
        worker.start()  # returns at once; the work finishes after the call
        return x

    r = time_ratio(candidate, lambda: _reference(x), repeats=3, warmup=1, margin=3.0, run_delay=NO_WAIT)
    assert r.candidate_s >= 0.1, r


def test_a_thread_that_never_ends_fails_the_candidate(monkeypatch):
    import probegate_probe.timing as timing

    monkeypatch.setattr(timing, "SETTLE_S", 0.2)
    stop = threading.Event()

    def candidate():
        threading.Thread(target=stop.wait, args=(30,), name="forever", daemon=True).start()

    try:
        with pytest.raises(ProbeFailure, match="left thread 'forever' running"):
            time_ratio(candidate, lambda: None, repeats=3, warmup=0)
    finally:
        stop.set()


class _Lazy(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for a in list(args) + list(kwargs.values()):
            src = getattr(a, "_src", None) if isinstance(a, _Lazy) else None
            if src is not None:
                a._src = None
                with torch._C.DisableTorchFunction():
                    a.copy_(_slow(src))
        with torch._C.DisableTorchFunction():
            return func(*args, **kwargs)


def test_a_lazy_result_is_computed_inside_the_timed_window():
    x = torch.ones(1000)

    def candidate():
        out = torch.Tensor._make_subclass(_Lazy, torch.empty_like(x))
        out._src = x
        return out

    r = time_ratio(candidate, lambda: _reference(x), repeats=3, warmup=1, margin=3.0, run_delay=NO_WAIT)
    assert r.candidate_s >= 0.1, r


def test_distinct_inputs_defeat_a_cache_and_outputs_are_compared():
    cache, computed = {}, []

    def memoised(v):
        key = (v.data_ptr(), tuple(v.shape), v._version)
        if key not in cache:
            computed.append(key)
            cache[key] = _reference(v)
        return cache[key]

    fixed = torch.randn(1000)
    time_ratio(lambda: memoised(fixed), lambda: _reference(fixed), repeats=5, warmup=1, margin=1e9, run_delay=NO_WAIT)
    assert len(computed) == 1  # one computation, five cached answers timed
    computed.clear()
    g = torch.Generator().manual_seed(0)
    fresh = [torch.randn(1000, generator=g) for _ in range(6)]
    time_ratio(memoised, _reference, repeats=5, warmup=1, margin=1e9, run_delay=NO_WAIT, inputs=lambda i: (fresh[i],))
    assert len(computed) == 6  # every call computed: the inputs are alive at once, no address is reused


def test_a_fast_wrong_answer_on_a_probe_shaped_input_fails():
    def shaped(v):
        flat = v.reshape(-1)
        return torch.zeros_like(v) if bool((flat[::97] == flat[0]).all()) else _reference(v)

    ones = torch.ones(10_000)
    with pytest.raises(ProbeFailure, match="differs from the reference"):
        time_ratio(shaped, _reference, repeats=3, warmup=1, inputs=lambda i: (ones * (i + 1),))


def test_recorded_mismatches_are_listed_instead_of_raised():
    # A probe that reports wrong outputs as a check of its own (a value flaw is not a time flaw).
    def shaped(v):
        flat = v.reshape(-1)
        return torch.zeros_like(v) if bool((flat[::97] == flat[0]).all()) else _reference(v)

    ones = torch.ones(10_000)
    r = time_ratio(shaped, _reference, repeats=3, warmup=1, margin=1e9, run_delay=NO_WAIT,
                   inputs=lambda i: (ones * (i + 1),), mismatch="record")
    assert len(r.mismatches) == 4 and r.mismatches[0].startswith("on timed input 1 the candidate's output differs")
    g = torch.Generator().manual_seed(2)
    data = [torch.randn(1000, generator=g) for _ in range(4)]
    assert time_ratio(_reference, _reference, repeats=3, warmup=1, margin=1e9, run_delay=NO_WAIT,
                      inputs=lambda i: (data[i],), mismatch="record").mismatches == []
    with pytest.raises(ValueError, match="mismatch must be"):
        time_ratio(_reference, _reference, repeats=1, warmup=0, inputs=lambda i: (data[i],), mismatch="ignore")


def test_inputs_keep_a_right_answer_passing():
    g = torch.Generator().manual_seed(1)
    data = [torch.randn(50_000, generator=g) for _ in range(8)]
    r = time_ratio(_reference, _reference, repeats=5, warmup=3, margin=3.0, inputs=lambda i: (data[i],))
    assert len(r.ratios) == 5
