"""ShardedAdam: Adam whose state is split across data-parallel ranks."""
import os

import pytest
import torch

from _dist import device, run
from common import LR, cpu_params, make_model, rank_batch, serial_training
from dpopt import Adam, DataParallelTrainer, ShardedAdam, load_checkpoint, save_checkpoint

STEPS = 3


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a.cpu(), b.cpu())
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(_same, a, b))
    return a == b


def _scenario(rank, world_size, tmp_dir):
    dev = device(rank)
    out = {}
    model = make_model(device=dev)
    optimizer = ShardedAdam(model.parameters(), lr=LR)
    trainer = DataParallelTrainer(model, optimizer)
    for step in range(STEPS):
        trainer.train_step(*rank_batch(step, rank, world_size, dev))
    out["params"] = cpu_params(model)

    state = optimizer.state_dict()
    fresh = ShardedAdam(make_model(device=dev).parameters(), lr=LR)
    fresh.load_state_dict(state)
    out["round_trip"] = _same(fresh.state_dict(), state)

    ckpt = os.path.join(tmp_dir, "ckpt")
    save_checkpoint(ckpt, model, optimizer, STEPS)
    model2 = make_model(seed=5, device=dev)
    optimizer2 = ShardedAdam(model2.parameters(), lr=LR)
    trainer2 = DataParallelTrainer(model2, optimizer2)
    out["resumed_step"] = load_checkpoint(ckpt, model2, optimizer2)
    out["resumed_params"] = cpu_params(model2)
    # A fixed batch: resumed training must keep lowering its loss.
    batch = rank_batch(0, rank, world_size, dev)
    out["losses"] = [trainer2.train_step(*batch) for _ in range(6)]
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sharded")
    return run(_scenario, tmp, str(tmp))


def test_sharded_adam_matches_replicated_adam(results):
    expected = serial_training(STEPS, len(results), Adam)
    for out in results:
        for got, want in zip(out["params"], expected):
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_ranks_agree_on_parameters(results):
    for out in results[1:]:
        for got, want in zip(out["params"], results[0]["params"]):
            torch.testing.assert_close(got, want, atol=0, rtol=0)


def test_state_dict_round_trip(results):
    assert all(out["round_trip"] for out in results)


def test_checkpoint_resume_keeps_training(results):
    for out in results:
        assert out["resumed_step"] == STEPS
        for got, want in zip(out["resumed_params"], out["params"]):
            torch.testing.assert_close(got, want, atol=0, rtol=0)
        losses = out["losses"]
        assert losses[-1] < losses[0], f"loss did not decrease after resuming: {losses}"
