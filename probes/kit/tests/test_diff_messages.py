"""The differential kit's messages and the bugs found documenting it (#37 item 7 and the list after it):
traffic said in calls with exact bytes, per real step, naming the head's new call sites; outputs that
compare inf, NaN and numpy arrays as they are; time checks that cannot decide say so; scenarios that
cannot reach the ranks are refused by name; timed repetitions see distinct reps (gloo, 2 ranks, CPU)."""
import json
import math
import os
import sys
import textwrap

import numpy as np
import pytest
import torch

from probegate_probe.differential import Sides, differential

BASE_LIB = """
import torch
import torch.distributed as dist

def step(t):
    dist.all_reduce(t)
    return t
"""
EXTRA_HEAD = BASE_LIB.replace("    dist.all_reduce(t)\n", "    dist.all_reduce(t)\n    dist.all_reduce(t)\n")
EXTRA_LINE = EXTRA_HEAD.splitlines().index("    dist.all_reduce(t)") + 2  # the second one, the head's own
STEPS = 4


def _trees(tmp_path, head_lib, base_lib=BASE_LIB, name="pgdiff_target.py"):
    out = {}
    for side, src in (("base", base_lib), ("head", head_lib)):
        d = tmp_path / side
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(textwrap.dedent(src))
        out[side] = str(d)
    return out


def _lines(path):
    return {c["id"]: c for c in map(json.loads, path.read_text().splitlines())}


def _four_steps(rank, world, rep):
    import pgdiff_target

    return [pgdiff_target.step(torch.full((256,), float(rank + rep + i + 1))).clone() for i in range(STEPS)]


def _figures(calls, by_op, **more):
    return {"calls": calls, "by_op": by_op, "bytes": sum(by_op.values()), "hidden": 0, "hidden_calls": [], "gaps": [], **more}


# Item 1: calls with exact bytes; no ratio that rounds a difference away.

def test_same_calls_with_a_few_more_bytes_never_read_one_times_the_bytes(results):
    base = _figures({"all_reduce": 8, "broadcast": 2}, {"all_reduce": 8192, "broadcast": 100})
    head = _figures({"all_reduce": 8, "broadcast": 2}, {"all_reduce": 8200, "broadcast": 100})
    Sides(world_size=2, counts={"base": [base], "head": [head]}, steps=2).check_traffic("near", per="step")
    got = _lines(results)["near"]
    assert got["status"] == "failed"
    assert "1.00×" not in got["message"], got["message"]
    assert got["message"] == ("head moves more bytes than base per step over 2 steps in the same calls (4,146 → 4,150 B, +4 B): "
                              "all_reduce: the same 4 calls per step, bytes 4,096 → 4,100 (+4 B)")


def test_calls_that_differ_are_said_with_both_sides_calls_and_exact_bytes(results):
    base = _figures({"all_reduce": 8}, {"all_reduce": 8192})
    head = _figures({"all_reduce": 9}, {"all_reduce": 8196})
    Sides(world_size=2, counts={"base": [base], "head": [head]}).check_traffic("calls")
    got = _lines(results)["calls"]
    assert got["message"] == "head's collectives differ from base's per call: +1 all_reduce call per call (8 → 9), bytes 8,192 → 8,196 (+4 B)"


# Item 2: per real step, and a label that is true.

def test_a_call_count_that_does_not_divide_into_steps_is_said_over_the_steps(results):
    base = _figures({"all_reduce": 12}, {"all_reduce": 12288})
    head = _figures({"all_reduce": 13}, {"all_reduce": 13312})
    Sides(world_size=2, counts={"base": [base], "head": [head]}, steps=4).check_traffic("uneven", per="step")
    got = _lines(results)["uneven"]
    assert got["message"] == ("head's collectives differ from base's per step over 4 steps: +1 all_reduce call over 4 steps (12 → 13), "
                              "bytes 12,288 → 13,312 (+1,024 B)"), got["message"]


def test_four_steps_with_one_extra_call_each_read_plus_one_per_step_naming_the_new_call_site(tmp_path, results):
    t = _trees(tmp_path, EXTRA_HEAD)
    sides = differential(_four_steps, world_size=2, base=t["base"], head=t["head"], measure=("traffic",), steps=STEPS)
    sides.check_traffic("per-step", per="step")
    sides.check_traffic("default")
    sides.check_traffic("per-call", per="call")
    got = _lines(results)
    site = f"new in head at pgdiff_target.py:{EXTRA_LINE} in step (4 calls in all)"
    assert got["per-step"]["message"] == ("head's collectives differ from base's per step over 4 steps: +1 all_reduce call per step (1 → 2), "
                                          f"bytes 1,024 → 2,048 (+1,024 B), {site}"), got["per-step"]["message"]
    # the scenario declared its steps: the default unit is the step, never "per call" for a step's figures
    assert got["default"]["message"] == got["per-step"]["message"]
    assert got["default"]["measured"]["head_bytes_per_step"] == 2048
    # per="call" asked for: the figures of one call of the scenario (its 4 steps), not a step's
    assert got["per-call"]["message"] == ("head's collectives differ from base's per call (4 steps per call): +4 all_reduce calls per call (4 → 8), "
                                          f"bytes 4,096 → 8,192 (+4,096 B), {site}"), got["per-call"]["message"]
    assert got["per-call"]["measured"]["head_bytes_per_call"] == 8192
    # Item 3: the check points at the head's new call site when the probe gave no location
    assert got["per-step"]["location"] == {"path": "pgdiff_target.py", "line": EXTRA_LINE}


# Item 3: call sites matched across a PR that moved lines.

def test_a_call_site_moved_by_the_pr_is_not_new_and_a_changed_one_is_named(results):
    def site(line, calls, nbytes, func="step", path="lib.py"):
        return {"op": "all_reduce", "path": path, "line": line, "func": func, "calls": calls, "bytes": nbytes}

    base = _figures({"all_reduce": 2}, {"all_reduce": 2048}, sites=[site(6, 1, 1024), site(20, 1, 1024, "other")])
    head = _figures({"all_reduce": 2}, {"all_reduce": 3072}, sites=[site(9, 1, 1024), site(23, 1, 2048, "other")])
    Sides(world_size=2, counts={"base": [base], "head": [head]}).check_traffic("moved")
    got = _lines(results)["moved"]
    assert got["message"].endswith("changed in head at lib.py:23 in other (1 → 1 calls, 1,024 → 2,048 B in all)"), got["message"]
    assert "lib.py:9" not in got["message"]


# Item 4: outputs.

def _outputs(results, b, h, **tol):
    Sides(world_size=1, counts={"base": [{"outputs": b}], "head": [{"outputs": h}]}).check_outputs("o", **tol)
    got = _lines(results)["o"]
    results.write_text("")
    return got


def test_bitwise_outputs_tell_inf_from_the_largest_float(results):
    big = torch.finfo(torch.float32).max
    got = _outputs(results, torch.tensor([math.inf, 1.0]), torch.tensor([big, 1.0]))
    assert got["status"] == "failed" and got["message"] == "rank 0: head's outputs differ from base's: outputs: max |difference| inf", got
    got = _outputs(results, torch.tensor([-math.inf, math.nan]), torch.tensor([-big, math.nan]))
    assert got["status"] == "failed", got
    assert _outputs(results, torch.tensor([math.inf, math.nan]), torch.tensor([math.inf, math.nan]))["status"] == "passed"
    got = _outputs(results, torch.tensor([1.0, math.nan]), torch.tensor([1.0, 2.0]))
    assert got["message"].endswith("outputs: NaN in other places (head 0, base 1)"), got


def test_numpy_arrays_are_compared(results):
    assert _outputs(results, {"a": np.arange(4.0)}, {"a": np.arange(4.0)})["status"] == "passed"
    got = _outputs(results, {"a": np.arange(4.0)}, {"a": np.arange(4.0) + [0, 0, 0.5, 0]})
    assert got["status"] == "failed" and got["message"].endswith("outputs['a']: max |difference| 0.5"), got
    got = _outputs(results, np.zeros(2, np.float32), np.zeros(2, np.float64))
    assert got["message"].endswith("outputs: shape/dtype (2,)/float64, base (2,)/float32"), got
    assert _outputs(results, np.array([1.0, np.nan]), np.array([1.0, np.nan]))["status"] == "passed"
    assert _outputs(results, np.array(["p0", "p1"], dtype=object), np.array(["p0", "p1"], dtype=object))["status"] == "passed"
    assert _outputs(results, np.array(["p0", "p1"], dtype=object), np.array(["p0", "p2"], dtype=object))["status"] == "failed"
    assert _outputs(results, np.arange(3.0), np.arange(3.0) + 1e-9, atol=1e-6)["status"] == "passed"
    got = _outputs(results, torch.zeros(2), np.zeros(2))
    assert got["message"].endswith("outputs: Tensor against ndarray"), got


def test_nan_equals_nan_in_the_same_place_in_floats_as_in_tensors(results):
    nan = float("nan")
    assert _outputs(results, {"loss": nan, "t": torch.tensor([nan])}, {"loss": nan, "t": torch.tensor([nan])})["status"] == "passed"
    assert _outputs(results, [np.float32(nan)], [np.float32(nan)])["status"] == "passed"
    assert _outputs(results, [nan], [1.0])["status"] == "failed"
    assert _outputs(results, [1.0], [nan])["status"] == "failed"
    # a tolerance applies to plain floats as to tensors
    assert _outputs(results, 1.0, 1.0 + 1e-9, atol=1e-6)["status"] == "passed"
    assert _outputs(results, 1.0, 1.1, atol=1e-6)["status"] == "failed"
    assert _outputs(results, nan, nan, atol=1e-6)["status"] == "passed"
    assert _outputs(results, math.inf, torch.finfo(torch.float64).max)["status"] == "failed"


# Item 5: a time check that cannot decide says so.

def test_a_time_check_with_two_repetitions_a_side_cannot_decide_and_says_so(results):
    Sides(world_size=1, times={"base": [1.0, 1.0], "head": [9.0, 9.0]}).check_time("t")
    got = _lines(results)["t"]
    assert got["status"] == "error", got
    assert got["message"].startswith("cannot decide: 2 head and 2 base repetitions are too few for the rank test"), got["message"]
    assert "at least 3" in got["message"]


def test_differential_refuses_a_time_run_of_two_repetitions_at_the_call(tmp_path):
    t = _trees(tmp_path, BASE_LIB)
    with pytest.raises(ValueError, match=r"repetitions=2\).*at least 3"):
        differential(_four_steps, world_size=2, repetitions=2, base=t["base"], head=t["head"], measure=("time",))


# Item 6: a scenario the ranks cannot import is refused by name.

def test_a_nested_scenario_is_refused_naming_it(tmp_path):
    t = _trees(tmp_path, BASE_LIB)

    def nested(rank, world, rep):
        return rank

    with pytest.raises(TypeError, match=r"module-level function.*test_a_nested_scenario_is_refused_naming_it\.<locals>\.nested"):
        differential(nested, world_size=2, base=t["base"], head=t["head"], measure=("outputs",))
    with pytest.raises(TypeError, match=r"module-level function.*<lambda>"):
        differential(lambda rank, world, rep: rank, world_size=2, base=t["base"], head=t["head"], measure=("outputs",))


def test_a_scenario_under_the_main_guard_is_refused_naming_it(tmp_path, monkeypatch):
    probe = tmp_path / "probe_x.py"
    probe.write_text("if __name__ == '__main__':\n    def scenario(rank, world, rep):\n        return rank\n")
    namespace = {"__name__": "__main__"}
    exec(compile(probe.read_text(), str(probe), "exec"), namespace)
    fn = namespace["scenario"]
    monkeypatch.setattr(fn, "__module__", "__main__")
    monkeypatch.setattr(sys.modules["__main__"], "scenario", fn, raising=False)
    t = _trees(tmp_path, BASE_LIB)
    with pytest.raises(TypeError, match=r"module-level function.*`scenario`.*__main__"):
        differential(fn, world_size=2, base=t["base"], head=t["head"], measure=("outputs",))


# Item 7: rep is distinct over the whole time run.

def _logged(rank, world, rep, log):
    import pgdiff_target

    if rank == 0:
        with open(os.path.join(log, os.path.basename(os.getcwd())), "a") as fh:
            fh.write(f"{rep}\n")
    return pgdiff_target.step(torch.full((4,), float(rep)))


def test_timed_repetitions_get_distinct_reps_across_both_rounds(tmp_path):
    t = _trees(tmp_path, BASE_LIB)
    log = tmp_path / "log"
    log.mkdir()
    differential(_logged, world_size=2, repetitions=5, base=t["base"], head=t["head"], measure=("time",), args=(str(log),), time_cap=None)
    for side in ("base", "head"):
        reps = [int(x) for x in (log / side).read_text().split()]
        timed = [r for r in reps if r != 0]  # 0: each round's warm-up call
        assert sorted(timed) == [1, 2, 3, 4, 5], (side, reps)


# Item 8: the verl gate's traffic figures are per real step (its scenario runs 4 steps a call).

VERL_TF = """
import torch
import torch.distributed as dist


def distributed_masked_mean(values, mask):
    t = torch.stack([(values * mask).sum(), mask.sum()])
    dist.all_reduce(t)
    return t[0] / t[1]
"""
VERL_TF_HEAD = VERL_TF.replace("    dist.all_reduce(t)\n", "    dist.all_reduce(t)\n    dist.all_reduce(t[1:].clone())\n")
VERL_EXTRA = VERL_TF_HEAD.splitlines().index("    dist.all_reduce(t[1:].clone())") + 1


def _verl_tree(root, tf):
    for rel, text in {"verl/__init__.py": "", "verl/trainer/__init__.py": "", "verl/trainer/ppo/__init__.py": "",
                      "verl/trainer/ppo/core_algos.py": "", "verl/utils/__init__.py": "", "verl/utils/torch_functional.py": tf}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return str(root)


def test_the_verl_gate_says_traffic_per_real_step(tmp_path, results, monkeypatch):
    probes = os.path.join(os.path.dirname(__file__), "..", "..", "verl-core-algos-gate")
    monkeypatch.syspath_prepend(os.path.realpath(probes))
    monkeypatch.delitem(sys.modules, "probe_differential", raising=False)
    import probe_differential as verl_probe

    monkeypatch.setenv("PROBEGATE_BASE_TREE", _verl_tree(tmp_path / "base", VERL_TF))
    monkeypatch.setenv("PROBEGATE_WORKSPACE", _verl_tree(tmp_path / "head", VERL_TF_HEAD))
    monkeypatch.setenv("VERL_GATE_REPS", "3")
    verl_probe.main()
    got = _lines(results)["distributed-reduction-traffic"]
    # per step: one all_reduce of 2 float32 at the base (8 B on 2 ranks), one more of 1 float32 at the head
    assert got["message"] == ("head's collectives differ from base's per step over 4 steps: +1 all_reduce call per step (1 → 2), "
                              f"bytes 8 → 12 (+4 B), new in head at verl/utils/torch_functional.py:{VERL_EXTRA} in distributed_masked_mean "
                              "(4 calls in all)"), got["message"]
