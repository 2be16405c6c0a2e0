"""spawn_meter: collectives and peak memory of the ranks a test spawns itself (gloo, 2 ranks, CPU)."""
import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as tmp_mp

from probegate_probe import spawn_meter


def _rank(rank, world, init, calls, keep_mib):
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    kept = []
    for _ in range(calls):
        t = torch.ones(1024)
        dist.all_reduce(t)
        if keep_mib:
            kept.append(torch.ones(keep_mib * 2**18))  # keep_mib MiB of float32, touched
    dist.destroy_process_group()


def _spawn(tmp_path, folder, label, calls, keep_mib=0):
    init = f"file://{tmp_path}/rdv-{label}"
    with spawn_meter.metering(str(folder), label):
        tmp_mp.spawn(_rank, args=(2, init, calls, keep_mib), nprocs=2, join=True)


def test_counts_each_spawned_ranks_collectives_and_peak(tmp_path):
    folder = tmp_path / "rec"
    folder.mkdir()
    _spawn(tmp_path, folder, "one", calls=3)
    _spawn(tmp_path, folder, "leaky", calls=3, keep_mib=8)
    recs = spawn_meter.read_records(str(folder))
    by = {}
    for r in recs:
        by.setdefault(r["label"], []).append(r)
    assert sorted(by) == ["leaky", "one"] and all(len(v) == 2 for v in by.values())
    for r in by["one"]:
        assert r["calls"] == {"all_reduce": 3}
        assert r["by_op"] == {"all_reduce": 3 * 4096}  # 2(n-1)/n * 4 KiB, n = 2
        assert r["exit"] is None and r["hidden"] == 0
    one = max(r["peak"] for r in by["one"])
    leaky = min(r["peak"] for r in by["leaky"])
    assert leaky - one >= 20 * 2**20, (one, leaky)  # 3 x 8 MiB kept


def test_a_failing_rank_is_recorded_and_still_fails_the_spawn(tmp_path):
    folder = tmp_path / "rec"
    folder.mkdir()
    with pytest.raises(Exception):
        with spawn_meter.metering(str(folder), "bad"):
            tmp_mp.spawn(_fails, nprocs=1, join=True)
    (rec,) = spawn_meter.read_records(str(folder))
    assert rec["exit"] == 1 and rec["calls"] == {}


def _fails(rank):
    raise ValueError("boom")


def test_outside_metering_nothing_is_wrapped(tmp_path):
    folder = tmp_path / "rec"
    folder.mkdir()
    with spawn_meter.metering(str(folder), "x"):
        pass
    tmp_mp.spawn(_noop, nprocs=1, join=True)
    assert spawn_meter.read_records(str(folder)) == []
    assert not os.listdir(folder)


def _noop(rank):
    pass
