"""Existing behaviour: collectives, data-parallel training with replicated Adam, checkpoints."""
import os

import pytest
import torch

from _dist import device, run
from common import LR, cpu_params, make_model, rank_batch, serial_training
from dpopt import Adam, DataParallelTrainer, all_gather, load_checkpoint, reduce_scatter, save_checkpoint

STEPS = 3


def _scenario(rank, world_size, tmp_dir):
    dev = device(rank)
    out = {}

    chunk = 3
    full = torch.arange(chunk * world_size, dtype=torch.float32, device=dev) * (rank + 1)
    shard = torch.empty(chunk, device=dev)
    reduce_scatter(shard, full)
    out["reduce_scatter"] = shard.cpu()
    gathered = torch.empty(chunk * world_size, device=dev)
    all_gather(gathered, torch.full((chunk,), float(rank), device=dev))
    out["all_gather"] = gathered.cpu()

    # Ranks start from different seeds: the trainer's broadcast must make them agree.
    model = make_model(seed=1 if rank == 0 else 50 + rank, device=dev)
    trainer = DataParallelTrainer(model, Adam(model.parameters(), lr=LR))
    for step in range(STEPS):
        trainer.train_step(*rank_batch(step, rank, world_size, dev))
    out["params"] = cpu_params(model)

    ckpt = os.path.join(tmp_dir, "ckpt")
    save_checkpoint(ckpt, model, trainer.optimizer, STEPS)
    for step in range(STEPS, STEPS + 2):
        trainer.train_step(*rank_batch(step, rank, world_size, dev))
    out["continued"] = cpu_params(model)

    model2 = make_model(seed=99, device=dev)
    optimizer2 = Adam(model2.parameters(), lr=0.5, betas=(0.5, 0.5))
    trainer2 = DataParallelTrainer(model2, optimizer2)
    out["resumed_step"] = load_checkpoint(ckpt, model2, optimizer2)
    for step in range(STEPS, STEPS + 2):
        trainer2.train_step(*rank_batch(step, rank, world_size, dev))
    out["resumed"] = cpu_params(model2)
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dpopt")
    return run(_scenario, tmp, str(tmp))


def test_reduce_scatter_and_all_gather(results):
    world_size = len(results)
    chunk = 3
    total = sum(r + 1 for r in range(world_size))
    for rank, out in enumerate(results):
        expected = torch.arange(rank * chunk, (rank + 1) * chunk, dtype=torch.float32) * total
        torch.testing.assert_close(out["reduce_scatter"], expected)
        expected_gather = torch.arange(world_size, dtype=torch.float32).repeat_interleave(chunk)
        torch.testing.assert_close(out["all_gather"], expected_gather)


def test_data_parallel_matches_serial_training(results):
    expected = serial_training(STEPS, len(results), Adam)
    for out in results:
        for got, want in zip(out["params"], expected):
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_checkpoint_resume(results):
    for out in results:
        assert out["resumed_step"] == STEPS
        for got, want in zip(out["resumed"], out["continued"]):
            torch.testing.assert_close(got, want, atol=0, rtol=0)


def test_adam_state_dict_round_trip():
    model = make_model()
    optimizer = Adam(model.parameters(), lr=LR, weight_decay=0.1)
    model(torch.ones(2, 8)).sum().backward()
    optimizer.step()
    restored = Adam(make_model().parameters())
    restored.load_state_dict(optimizer.state_dict())
    state = restored.state_dict()
    assert state["step"] == 1
    assert state["hyperparams"]["weight_decay"] == 0.1
    for got, want in zip(state["exp_avg_sq"], optimizer.state_dict()["exp_avg_sq"]):
        torch.testing.assert_close(got, want, atol=0, rtol=0)
