"""The per-parameter sync_weights: rollout ranks end up with the trainer's weights."""
import torch

from _dist import device_for_rank, spawn
from wsync import PolicyNet, RolloutWorker, Trainer, TRAINER_RANK, sync_weights


def _rank_sync_weights(rank, world_size):
    device = device_for_rank(rank)
    torch.manual_seed(100 + rank)  # deliberately different initial weights on every rank
    model = PolicyNet(8, 4, hidden=32, head_dtype=torch.float64, device=device)
    g = torch.Generator().manual_seed(0)
    obs = torch.randn(16, 8, generator=g).to(device)
    if rank == TRAINER_RANK:
        trainer = Trainer(model)
        trainer.step(obs, torch.randint(0, 4, (16,), generator=g).to(device), torch.randn(16, generator=g).to(device))
        version = sync_weights(model, trainer.version)
    else:
        worker = RolloutWorker(model)
        worker.weight_version = sync_weights(model)
        version = worker.report()["weight_version"]
    return {
        "version": version,
        "params": [p.detach().cpu() for p in model.parameters()],
        "logits": model(obs).detach().cpu(),
    }


def test_sync_weights_copies_trainer_weights_to_every_rollout_rank():
    results = spawn(_rank_sync_weights)
    ref = results[TRAINER_RANK]
    assert ref["version"] == 1
    for rank, res in enumerate(results):
        assert res["version"] == 1, rank
        for a, b in zip(ref["params"], res["params"]):
            assert a.dtype == b.dtype and torch.equal(a, b), rank
        assert torch.equal(ref["logits"], res["logits"]), rank
