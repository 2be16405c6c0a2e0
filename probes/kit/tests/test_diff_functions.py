"""Time where the change is: differential(functions=) times named functions inside the scenario, each
side in its own tree, and check_function_times judges each (gloo, 2 ranks, CPU)."""
import json
import textwrap

from probegate_probe._diff_functions import function_check_id
from probegate_probe.differential import changed_functions, differential

BASE = """
import torch

REGISTRY = {}


def register(name):
    def deco(fn):
        REGISTRY[name] = fn
        return fn
    return deco


@register("hot")
def hot(t):
    return t * 2


def rest(t):
    out = t
    for _ in range(20):
        out = torch.sin(out) + t
    return out


def unused(t):
    return t


class _Bucket:
    def start_Sync(self, t):
        return t + 1
"""

# The hot function, reached through its registry, made slower by a Python loop over its elements: the
# scenario as a whole (dominated by rest()) moves by little.
HEAD = BASE.replace("def hot(t):\n    return t * 2\n", "def hot(t):\n    _ = [float(v) for v in t.tolist()]\n    return t * 2\n")


def _scenario(rank, world, rep):
    import torch

    import pgfn_target

    t = torch.rand(200_000, generator=torch.Generator().manual_seed(rep))
    return float(pgfn_target.rest(t).sum() + pgfn_target.REGISTRY["hot"](t).sum() + pgfn_target._Bucket().start_Sync(t).sum())


def _trees(tmp_path, head):
    out = {}
    for side, src in (("base", BASE), ("head", head)):
        d = tmp_path / side
        d.mkdir()
        (d / "pgfn_target.py").write_text(textwrap.dedent(src))
        out[side] = str(d)
    return out


def _lines(path):
    return {c["id"]: c for c in map(json.loads, path.read_text().splitlines())}


def test_changed_functions_names_what_the_head_changed(tmp_path):
    t = _trees(tmp_path, HEAD)
    assert changed_functions(t["base"], t["head"], ["pgfn_target.py", "absent.py"]) == ["pgfn_target.py:hot"]
    assert changed_functions(t["base"], t["base"], ["pgfn_target.py"]) == []


def test_a_slower_hot_function_fails_its_own_check_through_its_registry(tmp_path, results):
    t = _trees(tmp_path, HEAD)
    functions = ["pgfn_target.py:hot", "pgfn_target.py:rest", "pgfn_target.py:unused", "pgfn_target.py:gone"]
    sides = differential(_scenario, world_size=2, repetitions=5, base=t["base"], head=t["head"], measure=("time",), functions=functions)
    sides.check_function_times("fn-time")
    got = _lines(results)
    assert got["fn-time.hot"]["status"] == "failed", got["fn-time.hot"]
    assert got["fn-time.hot"]["message"].startswith("pgfn_target.py:hot: head spends ")
    assert got["fn-time.hot"]["measured"]["time_ratio"] > 2
    assert got["fn-time.rest"]["status"] == "passed", got["fn-time.rest"]
    assert got["fn-time.unused"]["status"] == "skipped" and "not called" in got["fn-time.unused"]["message"]
    assert got["fn-time.gone"]["status"] == "skipped" and "not defined in the base's tree" in got["fn-time.gone"]["message"]
    assert len(sides.function_times["head"]["pgfn_target.py:hot"]) == 5


def test_identical_trees_pass_every_function(tmp_path, results):
    t = _trees(tmp_path, BASE)
    method = "pgfn_target.py:_Bucket.start_Sync"  # a method of a private class: its check id keeps to the id pattern
    sides = differential(_scenario, world_size=2, repetitions=5, base=t["base"], head=t["head"], measure=("time",), functions=["pgfn_target.py:hot", "pgfn_target.py:rest", method])
    sides.check_function_times("fn-time")
    got = _lines(results)
    assert function_check_id("fn-time", method).startswith("fn-time.bucket.start_sync-")
    assert {k: v["status"] for k, v in got.items()} == {"fn-time.hot": "passed", "fn-time.rest": "passed", function_check_id("fn-time", method): "passed"}
