"""Head against base: one scenario on two trees, compared in numbers (gloo, 2 ranks, CPU)."""
import json
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
    assert "head sends 2.00× the bytes of base per step" in got["sync-bytes"]["message"]
    assert "all_reduce: 2 calls per step, base 1" in got["sync-bytes"]["message"]
    assert got["sync-bytes"]["measured"]["head_all_reduce_calls"] == 2
    assert got["same-result"]["status"] == "failed" and "rank 0" in got["same-result"]["message"]


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
