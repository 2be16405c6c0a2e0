"""Head against base: one scenario on two trees, compared in numbers (gloo, 2 ranks, CPU)."""
import json
import re
import textwrap

import pytest
import torch

from probegate_probe.differential import Sides, differential, mann_whitney_greater

BASE_LIB = """
import torch
import torch.distributed as dist

def step(t):
    dist.all_reduce(t)
    return t
"""


def _scenario(rank, world, rep):
    import pgdiff_target

    t = torch.full((256,), float(rank + rep + 1))
    return pgdiff_target.step(t)


def _trees(tmp_path, head_lib):
    out = {}
    for side, src in (("base", BASE_LIB), ("head", head_lib)):
        d = tmp_path / side
        d.mkdir()
        (d / "pgdiff_target.py").write_text(textwrap.dedent(src))
        out[side] = str(d)
    return out


def _lines(path):
    return {c["id"]: c for c in map(json.loads, path.read_text().splitlines())}


def test_identical_trees_pass_every_comparison(tmp_path, results):
    t = _trees(tmp_path, BASE_LIB)
    sides = differential(_scenario, world_size=2, repetitions=4, base=t["base"], head=t["head"], measure=("traffic", "outputs", "memory"))
    sides.check_traffic("sync-bytes", per="step")
    sides.check_outputs("same-result")
    sides.check_memory("peak")
    got = _lines(results)
    assert {k: v["status"] for k, v in got.items()} == {"sync-bytes": "passed", "same-result": "passed", "peak": "passed"}
    assert got["sync-bytes"]["measured"]["base_bytes_per_step"] == got["sync-bytes"]["measured"]["head_bytes_per_step"] > 0


def test_an_extra_collective_is_reported_in_numbers(tmp_path, results):
    head = BASE_LIB.replace("    dist.all_reduce(t)\n", "    dist.all_reduce(t)\n    dist.all_reduce(t)\n")
    t = _trees(tmp_path, head)
    sides = differential(_scenario, world_size=2, base=t["base"], head=t["head"], measure=("traffic", "outputs"))
    sides.check_traffic("sync-bytes", per="step")
    sides.check_outputs("same-result")
    got = _lines(results)
    assert got["sync-bytes"]["status"] == "failed"
    # 256 float32 all-reduced over 2 ranks: 2(n-1)/n · 1,024 B = 1,024 B per call
    assert got["sync-bytes"]["message"] == ("head's collectives differ from base's per step: +1 all_reduce call per step (1 → 2), bytes 1,024 → 2,048 "
                                            "(+1,024 B), new in head at pgdiff_target.py:7 in step (1 call in all)")
    assert got["sync-bytes"]["location"] == {"path": "pgdiff_target.py", "line": 7}  # the head's extra call, where the probe named no place
    assert got["sync-bytes"]["measured"]["head_all_reduce_calls"] == 2
    assert got["same-result"]["status"] == "failed" and "rank 0" in got["same-result"]["message"]


HIDDEN_HEAD = BASE_LIB.replace("def step(t):\n    dist.all_reduce(t)\n", """def _spare(x):
    dist.all_reduce(x)


def step(t):
    dist.all_reduce(t)
    import threading
    helper = threading.Thread(target=_spare, args=(t.clone(),))
    helper.start()
    helper.join()
""")
SPARE_LINE = HIDDEN_HEAD.splitlines().index("    dist.all_reduce(x)") + 1


def test_a_collective_hidden_on_a_helper_thread_fails_the_traffic_check_naming_it(tmp_path, results):
    # The counted traffic is the base's (one all_reduce on the counter's thread); the extra one goes out
    # on a helper thread, where the counter does not look (issue 38, item 4).
    t = _trees(tmp_path, HIDDEN_HEAD)
    sides = differential(_scenario, world_size=2, base=t["base"], head=t["head"], measure=("traffic",))
    sides.check_traffic("sync-bytes", per="step")
    got = _lines(results)["sync-bytes"]
    assert got["status"] == "failed", got
    assert re.fullmatch(re.escape("head issued 1 collective the counter could not see in its counted run (another thread, the dispatch "
                                  "mode disabled, a method bound before it), base none: all_reduce of 1,024 B (group of 2) on thread 'Thread-")
                        + r"\d+" + re.escape(f" (_spare)' at pgdiff_target.py:{SPARE_LINE}; what the counter saw: head and base move the "
                                              "same 1,024 B per step (all_reduce 1 call per step)"), got["message"]), got["message"]
    assert got["measured"]["head_hidden_collectives"] == 1 and got["measured"]["base_hidden_collectives"] == 0


def test_the_same_hidden_collective_on_both_sides_passes_and_is_said(tmp_path, results):
    t = _trees(tmp_path, HIDDEN_HEAD)
    sides = differential(_scenario, world_size=2, base=t["head"], head=t["head"], measure=("traffic",))
    sides.check_traffic("sync-bytes", per="step")
    got = _lines(results)["sync-bytes"]
    assert got["status"] == "passed", got
    assert "both sides issued 1 collective the counter could not see (their bytes are not compared): all_reduce of 1,024 B" in got["message"], got["message"]


def _figures(calls, by_op, hidden=0, hidden_calls=(), gaps=()):
    return {"calls": calls, "by_op": by_op, "bytes": sum(by_op.values()), "hidden": hidden, "hidden_calls": list(hidden_calls), "gaps": list(gaps)}


def test_traffic_messages_give_calls_with_bytes_per_declared_step(results):
    base = _figures({"all_reduce": 8, "broadcast": 2}, {"all_reduce": 8192, "broadcast": 100})
    head = _figures({"all_reduce": 10, "broadcast": 2}, {"all_reduce": 8200, "broadcast": 100})
    Sides(world_size=2, counts={"base": [base], "head": [head]}, steps=2).check_traffic("calls", per="step")
    same_calls = _figures({"all_reduce": 8}, {"all_reduce": 12288})
    Sides(world_size=2, counts={"base": [base], "head": [dict(same_calls, calls={"all_reduce": 8, "broadcast": 2}, by_op={"all_reduce": 12288, "broadcast": 100}, bytes=12388)]}).check_traffic("bytes", per="step", steps=2)
    Sides(world_size=2, counts={"base": [base], "head": [base]}, steps=2).check_traffic("same", per="step")
    gap = _figures({"all_reduce": 8}, {"all_reduce": 8192}, gaps=["alltoall_base: KeyError: x"])
    Sides(world_size=2, counts={"base": [_figures({"all_reduce": 8}, {"all_reduce": 8192})], "head": [gap]}).check_traffic("gap", per="step")
    got = _lines(results)
    assert got["calls"]["status"] == "failed"
    assert got["calls"]["message"] == ("head's collectives differ from base's per step over 2 steps: +1 all_reduce call per step (4 → 5), "
                                       "bytes 4,096 → 4,100 (+4 B); in all 4,146 → 4,150 B per step (+4 B)")
    assert "×" not in got["calls"]["message"]  # no ratio of bytes where the calls differ
    assert got["calls"]["measured"]["steps"] == 2 and got["calls"]["measured"]["head_bytes_per_step"] == 4150
    assert got["bytes"]["message"] == ("head moves 1.49× the bytes of base per step over 2 steps in the same calls (4,146 → 6,194 B, +2,048 B): "
                                       "all_reduce: the same 4 calls per step, bytes 4,096 → 6,144 (+2,048 B, 1.50× base)")
    assert got["same"]["status"] == "passed"
    assert got["same"]["message"] == "head and base move the same 4,146 B per step over 2 steps (all_reduce 4 calls, broadcast 1 call per step)"
    assert got["gap"]["status"] == "error" and "could not size (a kit gap): head alltoall_base ×1, base none" in got["gap"]["message"]


def test_each_side_imports_only_its_own_tree(tmp_path):
    head = BASE_LIB.replace("return t", "return t * 0 + 7")
    t = _trees(tmp_path, head)
    sides = differential(_scenario, world_size=2, base=t["base"], head=t["head"], measure=("outputs",))
    assert torch.equal(sides.counts["base"][0]["outputs"], torch.full((256,), 3.0))
    assert torch.equal(sides.counts["head"][0]["outputs"], torch.full((256,), 7.0))


def test_time_fails_only_past_the_margin_with_a_rank_test(results):
    sides = Sides(world_size=1, times={"base": [1.0, 1.02, 0.99, 1.01, 1.0, 0.98], "head": [1.6, 1.7, 1.65, 1.62, 1.7, 1.66]})
    sides.check_time("slower", margin=1.25)
    noisy = Sides(world_size=1, times={"base": [1.0, 1.1, 0.9], "head": [1.1, 1.0, 1.2]})
    noisy.check_time("noise", margin=1.25)
    got = _lines(results)
    assert got["slower"]["status"] == "failed" and "head takes 1.6" in got["slower"]["message"]
    assert got["noise"]["status"] == "passed"


def test_memory_difference_of_peaks(results):
    Sides(world_size=1, peaks={"base": 100 << 20, "head": 200 << 20}).check_memory("peak")
    Sides(world_size=1, peaks={"base": 100 << 20, "head": 102 << 20}).check_memory("peak-ok")
    got = _lines(results)
    assert got["peak"]["status"] == "failed" and "head holds 100.0 MiB more than base" in got["peak"]["message"]
    assert got["peak-ok"]["status"] == "passed"


def test_rank_test():
    assert mann_whitney_greater([5, 6, 7, 8], [1, 2, 3, 4]) < 0.05
    assert mann_whitney_greater([1, 2, 3, 4], [5, 6, 7, 8]) > 0.9
    assert mann_whitney_greater([], [1]) == 1.0


SLOW_HEAD = BASE_LIB.replace("    return t\n", "    import time\n    time.sleep(0.01 if t[0] < 2 else 2.6)\n    return t\n")


def test_a_head_far_past_the_base_is_stopped_and_still_fails_in_numbers(tmp_path, results):
    # The head sleeps 2.6 s per timed repetition (rep >= 1) where the base takes milliseconds: past the
    # cap's 5 s floor each round stops starting repetitions after its second, 4 of the 9 asked.
    t = _trees(tmp_path, SLOW_HEAD)
    sides = differential(_scenario, world_size=2, repetitions=9, base=t["base"], head=t["head"], measure=("time",), time_cap=20.0)
    sides.check_time("step-time", margin=2.0)
    got = _lines(results)["step-time"]
    assert sides.stopped["head"] == (4, 9) and len(sides.times["head"]) == 4
    assert len(sides.times["base"]) == 9
    assert got["status"] == "failed" and "the head was stopped past its time cap" in got["message"]
    assert got["measured"]["head_repetitions_asked"] == 9 and got["measured"]["rank_test_p"] < 0.05


def test_without_a_time_cap_every_repetition_runs(tmp_path):
    t = _trees(tmp_path, BASE_LIB)
    sides = differential(_scenario, world_size=2, repetitions=5, base=t["base"], head=t["head"], measure=("time",), time_cap=None)
    assert len(sides.times["head"]) == len(sides.times["base"]) == 5 and sides.stopped == {}


STALLED_HEAD = BASE_LIB.replace("    return t\n", "    import time\n    time.sleep(9.0)\n    return t\n")


def test_a_head_whose_counted_run_is_past_the_cap_gets_no_timed_rounds_and_fails(tmp_path, results):
    # One call of the head's scenario takes 9 s where the base's takes milliseconds: with a cap of 2× (the
    # 5 s floor binding) the counted run alone is past it, so the timed rounds (at least 4 more calls) are skipped.
    t = _trees(tmp_path, STALLED_HEAD)
    sides = differential(_scenario, world_size=2, repetitions=5, base=t["base"], head=t["head"], measure=("traffic", "time"), time_cap=2.0)
    sides.check_time("step-time", margin=2.0)
    got = _lines(results)["step-time"]
    assert "head" in sides.capped and sides.times == {}
    assert got["status"] == "failed" and "past the time cap of 2×: its timed repetitions were not run" in got["message"]
    assert got["measured"]["head_counted_run_s"] > 9.0 > got["measured"]["base_counted_run_s"]
