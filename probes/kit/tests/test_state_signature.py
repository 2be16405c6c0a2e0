import math

import pytest
import torch

from probegate_probe import (ProbeFailure, assert_optimizer_state_equal, assert_state_equal,
                             require_signature)


def _state():
    torch.manual_seed(0)
    return {"model": {"w": torch.randn(4, 5), "b": torch.zeros(5, dtype=torch.bfloat16)},
            "opt": [{"step": 3, "exp_avg": torch.randn(7)}, {"step": 3, "lr": 0.1}],
            "rng": torch.tensor([1, 2, 3]), "nan": torch.tensor([1.0, math.nan])}


def _flip_bit(t, index, bit=0):
    t = t.clone()
    flat = t.view(torch.int32).reshape(-1)
    flat[index] ^= 1 << bit
    return t


def test_equal_states_pass_including_nan_in_the_same_places():
    assert_state_equal(_state(), _state())


def test_a_single_flipped_bit_is_found_by_path():
    a, b = _state(), _state()
    b["opt"][0]["exp_avg"] = _flip_bit(b["opt"][0]["exp_avg"], 5)
    with pytest.raises(ProbeFailure) as info:
        assert_state_equal(a, b)
    message = str(info.value)
    assert "state.opt[0].exp_avg" in message and "1 of 7 elements differ" in message
    assert "index [5]" in message and "max abs diff" in message


def test_signed_zero_and_sign_bit_differ():
    with pytest.raises(ProbeFailure):
        assert_state_equal({"x": torch.tensor([0.0])}, {"x": torch.tensor([-0.0])})
    with pytest.raises(ProbeFailure):
        assert_state_equal({"x": 0.0}, {"x": -0.0})


@pytest.mark.parametrize("mutate, expected", [
    (lambda s: s["model"].pop("b"), "missing in second: state.model.b"),
    (lambda s: s["model"].__setitem__("extra", 1), "only in second: state.model.extra"),
    (lambda s: s["model"].__setitem__("w", s["model"]["w"].double()), "dtype torch.float32 vs torch.float64"),
    (lambda s: s["model"].__setitem__("w", s["model"]["w"].reshape(5, 4)), "shape (4, 5) vs (5, 4)"),
    (lambda s: s["opt"][1].__setitem__("step", 3.0), "state.opt[1].step: int 3 vs float 3.0"),
    (lambda s: s["opt"].append({}), "state.opt: length 2 vs 3"),
    (lambda s: s.__setitem__("rng", torch.tensor([1, 2, 4])), "state.rng"),
    (lambda s: s.__setitem__("nan", torch.tensor([math.nan, 1.0])), "state.nan"),
])
def test_differences_are_named(mutate, expected):
    a, b = _state(), _state()
    mutate(b)
    with pytest.raises(ProbeFailure) as info:
        assert_state_equal(a, b)
    assert expected in str(info.value)


def _adam_state(steps, lr=0.01):
    torch.manual_seed(1)
    model = torch.nn.Linear(6, 3)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        model(torch.ones(2, 6)).pow(2).sum().backward()
        opt.step()
    return opt.state_dict()


def test_optimizer_state_dicts():
    assert_optimizer_state_equal(_adam_state(2), _adam_state(2))
    with pytest.raises(ProbeFailure) as info:
        assert_optimizer_state_equal(_adam_state(2), _adam_state(3))
    assert "optimizer.state[0]" in str(info.value)
    with pytest.raises(ProbeFailure) as info:
        assert_optimizer_state_equal(_adam_state(0), _adam_state(0, lr=0.02))
    assert "optimizer.param_groups[0].lr" in str(info.value)
    with pytest.raises(ProbeFailure):
        assert_optimizer_state_equal({"state": {}}, _adam_state(1))


class Optim:
    def __init__(self, params, lr, world_size=1):
        self.params = params

    def step(self, closure=None):
        return closure

    @classmethod
    def build(cls, params, lr):
        return cls(params, lr)

    @staticmethod
    def shard(tensor, rank, world):
        return tensor

    state = {}


def free_function(model, optimizer, *, steps=1):
    return steps


def test_require_signature_accepts_matching_prefixes():
    import sys

    assert require_signature(Optim, "step", ["closure"]) is Optim.step
    assert require_signature(Optim, "build", ["params", "lr"])
    assert require_signature(Optim, "shard", ["tensor", "rank"])
    module = sys.modules[__name__]
    assert require_signature(module, "Optim", ["params", "lr"]) is Optim
    assert require_signature(module, "free_function", ["model", "optimizer", "steps"]) is free_function


@pytest.mark.parametrize("name, params, expected", [
    ("missing", ["x"], "Optim.missing is missing"),
    ("state", ["x"], "Optim.state is a dict, expected a callable"),
    ("step", ["closure", "extra"], "expected parameters starting with (closure, extra)"),
    ("build", ["lr", "params"], "takes build(params, lr)"),
])
def test_require_signature_failures_say_what_was_expected_and_found(name, params, expected):
    with pytest.raises(ProbeFailure) as info:
        require_signature(Optim, name, params)
    assert expected in str(info.value)
