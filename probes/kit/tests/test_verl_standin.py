"""The verl gate's probe never compares a call made with a substitute (#37 item 5): PR #2953's false
rejection, where the old tree's ActorConfig could not be built and a stand-in without the PR's new
field made only the head raise. Fake verl trees, 2 gloo ranks."""
import json
import os
import sys
import textwrap

import pytest

TF = """
import torch
import torch.distributed as dist


def masked_mean(values, mask, axis=None):
    return (values * mask).sum() / mask.sum()
"""

ALGOS = """
def compute_policy_loss_vanilla(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config):
    ratio = (log_prob - old_log_prob).exp()
    return (ratio * advantages * response_mask).sum() * config.clip_ratio{extra}
"""

# An ActorConfig that cannot be built from the probe's fields: it needs one with no default.
UNBUILDABLE = """
from dataclasses import dataclass


@dataclass
class ActorConfig:
    strategy: str
    must_give: int
    clip_ratio: float = 0.2
"""

# An older ActorConfig: it knows fewer fields than the probe passes (no rollout_n, no clip_ratio_high).
OLDER = """
from dataclasses import dataclass


@dataclass
class ActorConfig:
    strategy: str = "fsdp"
    ppo_micro_batch_size_per_gpu: int = 1
    ppo_mini_batch_size: int = 4
    use_dynamic_bsz: bool = False
    clip_ratio: float = 0.2
    new_field: float = 1.0
"""


def _tree(root, config, extra=""):
    files = {"verl/__init__.py": "", "verl/trainer/__init__.py": "", "verl/trainer/ppo/__init__.py": "",
             "verl/trainer/ppo/core_algos.py": ALGOS.format(extra=extra), "verl/utils/__init__.py": "",
             "verl/utils/torch_functional.py": TF, "verl/workers/__init__.py": "", "verl/workers/config.py": config}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return str(root)


def _run(tmp_path, monkeypatch, results, config):
    probes = os.path.join(os.path.dirname(__file__), "..", "..", "verl-core-algos-gate")
    monkeypatch.syspath_prepend(os.path.realpath(probes))
    monkeypatch.delitem(sys.modules, "probe_differential", raising=False)
    import probe_differential as verl_probe

    monkeypatch.setenv("PROBEGATE_BASE_TREE", _tree(tmp_path / "base", config))
    # The PR reads a new field of the config (with the default its ActorConfig gives it).
    monkeypatch.setenv("PROBEGATE_WORKSPACE", _tree(tmp_path / "head", config, extra=" * config.new_field"))
    monkeypatch.setenv("VERL_GATE_REPS", "3")
    verl_probe.main()
    return {c["id"]: c for c in map(json.loads, results.read_text().splitlines())}


def test_a_call_only_the_stand_in_cannot_serve_is_not_compared_but_said(tmp_path, monkeypatch, results):
    got = _run(tmp_path, monkeypatch, results, UNBUILDABLE)["outputs.policy_loss_vanilla"]
    assert got["status"] == "error", got
    assert "not compared: head: the stand-in config lacks 'new_field'" in got["message"], got["message"]
    assert "ActorConfig(strategy='fsdp'" in got["message"] and "must_give" in got["message"], got["message"]


def test_an_older_actor_config_is_built_from_the_fields_it_knows_and_compared(tmp_path, monkeypatch, results):
    got = _run(tmp_path, monkeypatch, results, OLDER)
    assert got["outputs.policy_loss_vanilla"]["status"] == "passed", got["outputs.policy_loss_vanilla"]
    assert got["outputs.masked_mean"]["status"] == "passed"
