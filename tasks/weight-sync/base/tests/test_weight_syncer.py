"""Bucketed weight synchronisation (WeightSyncer)."""
import torch

from _dist import device_for_rank, spawn
from wsync import PolicyNet, RolloutWorker, Trainer, TRAINER_RANK


def _rank_weight_syncer(rank, world_size):
    from wsync import WeightSyncer

    device = device_for_rank(rank)
    torch.manual_seed(200 + rank)
    model = PolicyNet(16, 6, hidden=64, n_layers=3, head_dtype=torch.float64, device=device)
    syncer = WeightSyncer(model, bucket_bytes=8192)
    out = {"buckets": syncer.buckets, "names": [n for n, _ in model.named_parameters()]}
    g = torch.Generator().manual_seed(1)
    obs = torch.randn(32, 16, generator=g).to(device)
    if rank == TRAINER_RANK:
        trainer = Trainer(model)
        for _ in range(3):
            trainer.step(obs, torch.randint(0, 6, (32,), generator=g).to(device), torch.randn(32, generator=g).to(device))
        out["first"] = syncer.sync(trainer.version)
        out["second"] = syncer.sync(trainer.version)
    else:
        worker = RolloutWorker(model)
        out["first"] = syncer.sync()
        out["second"] = syncer.sync()
        worker.weight_version = syncer.version
        out["greedy"] = worker.act(obs, greedy=True).actions.cpu()
    out["version"] = syncer.version
    out["params"] = [p.detach().cpu() for p in model.parameters()]
    if rank == TRAINER_RANK:
        out["greedy"] = RolloutWorker(model).act(obs, greedy=True).actions.cpu()
    return out


def test_weight_syncer_matches_trainer_and_skips_when_up_to_date():
    results = spawn(_rank_weight_syncer)
    ref = results[TRAINER_RANK]
    for rank, res in enumerate(results):
        assert res["first"] is True, rank
        assert res["second"] is False, rank
        assert res["version"] == 3, rank
        for a, b in zip(ref["params"], res["params"]):
            assert a.dtype == b.dtype and torch.equal(a, b), rank
        assert torch.equal(res["greedy"], ref["greedy"]), rank
        flat = [n for bucket in res["buckets"] for n in bucket]
        assert sorted(flat) == sorted(res["names"]), rank
        assert len(res["buckets"]) > 1, rank
