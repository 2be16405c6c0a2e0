import json
import os
import pathlib
import subprocess
import sys

import pytest
import torch
import torch.distributed as dist

from probegate_probe import ProbeFailure, RankError, backend, check, device_for_rank, run_ranks, world_size

KIT = pathlib.Path(__file__).resolve().parents[1]


def _values(rank, n, scale):
    t = torch.full((3,), float(rank))
    dist.all_reduce(t)
    return {"rank": rank, "n": n, "sum": t * scale, "env": os.environ["RANK"]}


def _calls_submission(rank, n):
    from subpkg import mod

    if rank == 1:
        mod.explode(rank)
    return rank


def _probe_fails(rank, n):
    if rank == 0:
        raise ProbeFailure("rank 0 saw a wrong shard", location={"path": "subpkg/mod.py", "line": 20},
                           measured={"shard_bytes": 12})
    return rank


def _hangs(rank, n):
    from subpkg import mod

    return mod.hang(60)


def test_env_defaults(monkeypatch):
    monkeypatch.delenv("PROBEGATE_WORLD_SIZE", raising=False)
    assert world_size() == 2 and world_size(default=3) == 3
    monkeypatch.setenv("PROBEGATE_WORLD_SIZE", "4")
    assert world_size() == 4
    monkeypatch.setenv("PROBEGATE_BACKEND", "gloo")
    assert backend() == "gloo" and device_for_rank(1) == torch.device("cpu")
    monkeypatch.setenv("PROBEGATE_BACKEND", "mpi")
    with pytest.raises(ValueError):
        backend()


def test_run_ranks_returns_values_in_rank_order():
    out = run_ranks(_values, world_size=2, args=(torch.tensor(2.0),), backend="gloo", timeout=120)
    assert [v["rank"] for v in out] == [0, 1] and [v["env"] for v in out] == ["0", "1"]
    for v in out:
        assert v["n"] == 2 and torch.equal(v["sum"], torch.full((3,), 2.0))


def test_run_ranks_rejects_lambdas():
    with pytest.raises(TypeError):
        run_ranks(lambda rank, n: rank)


def test_rank_raising_in_submission_is_failed_with_location(fake_workspace, tmp_path, monkeypatch):
    with pytest.raises(RankError) as info:
        run_ranks(_calls_submission, world_size=2, backend="gloo", timeout=120)
    err = info.value
    assert err.rank == 1 and err.summary == "ValueError: bad value 1" and not err.timed_out
    assert any(f[0].endswith("subpkg/mod.py") and f[1] == 6 for f in err.frames)
    results = tmp_path / "r.jsonl"
    monkeypatch.setenv("PROBEGATE_RESULTS", str(results))
    with check("ranks-raise", "functional"):
        raise err
    line = json.loads(results.read_text())
    assert line["status"] == "failed"
    assert line["message"] == "rank 1: ValueError: bad value 1 (raised in subpkg/mod.py:6)"
    assert line["location"] == {"path": "subpkg/mod.py", "line": 6}


def test_probe_failure_inside_a_rank_keeps_message(fake_workspace, tmp_path, monkeypatch):
    results = tmp_path / "r.jsonl"
    monkeypatch.setenv("PROBEGATE_RESULTS", str(results))
    with check("ranks-probe-failure", "state"):
        run_ranks(_probe_fails, world_size=2, backend="gloo", timeout=120)
    line = json.loads(results.read_text())
    assert line == {"id": "ranks-probe-failure", "category": "state", "status": "failed",
                    "message": "rank 0: rank 0 saw a wrong shard",
                    "location": {"path": "subpkg/mod.py", "line": 20}, "measured": {"shard_bytes": 12}}


def test_timeout_reports_where_ranks_hang(fake_workspace, tmp_path, monkeypatch):
    results = tmp_path / "r.jsonl"
    monkeypatch.setenv("PROBEGATE_RESULTS", str(results))
    with check("ranks-hang", "functional"):
        run_ranks(_hangs, world_size=2, backend="gloo", timeout=3)
    line = json.loads(results.read_text())
    assert line["status"] == "failed", line
    assert line["message"].startswith("rank ") and "timeout after 3 s" in line["message"]
    assert line["message"].endswith("(hung in subpkg/mod.py:16)")


PROBE_SCRIPT = """\
import dataclasses

import torch
import torch.distributed as dist
from probegate_probe import CollectiveCounter, check, emit, run_ranks

emit("import-time", "structure", "passed")  # written once: ranks import this file as __mp_main__


@dataclasses.dataclass
class Figures:  # defined in __main__: comes back from the ranks as this class
    total_bytes: int


def ranks_fn(rank, n):
    with CollectiveCounter() as c:
        dist.all_reduce(torch.ones(256))
    return Figures(c.total_bytes)


if __name__ == "__main__":
    with check("traffic-ok", "traffic") as c:
        per_rank = run_ranks(ranks_fn)
        c.measured["bytes"] = per_rank[0].total_bytes
        assert per_rank == [Figures(1024), Figures(1024)], per_rank
"""


def test_probe_file_run_as_script(tmp_path):
    probe = tmp_path / "probes" / "probe_traffic.py"
    probe.parent.mkdir()
    probe.write_text(PROBE_SCRIPT)
    results = tmp_path / "results.jsonl"
    env = dict(os.environ, PROBEGATE_RESULTS=str(results), PROBEGATE_WORKSPACE=str(tmp_path),
               PROBEGATE_PROBE_DIR=str(probe.parent), PYTHONPATH=str(KIT), PROBEGATE_BACKEND="gloo",
               PROBEGATE_WORLD_SIZE="2")
    proc = subprocess.run([sys.executable, str(probe)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(l["id"], l["status"]) for l in lines] == [("import-time", "passed"), ("traffic-ok", "passed")]
    assert lines[1]["measured"] == {"bytes": 1024}


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ranks_meet_on_the_port_the_engine_gave_the_job(monkeypatch):
    from probegate_probe import ranks

    port = _free_port()
    monkeypatch.setenv("PROBEGATE_RENDEZVOUS_PORT", str(port))
    assert ranks.rendezvous("/unused") == f"tcp://127.0.0.1:{port}"
    # Twice in a row on the same port: a time probe measures in several calls.
    for _ in range(2):
        values = run_ranks(_values, world_size=2, args=(1.0,), backend="gloo", timeout=60)
        assert [v["sum"].tolist() for v in values] == [[1.0, 1.0, 1.0]] * 2


def test_rendezvous_is_a_private_file_without_a_port_and_refuses_a_bad_one(monkeypatch):
    from probegate_probe import ranks

    monkeypatch.delenv("PROBEGATE_RENDEZVOUS_PORT", raising=False)
    assert ranks.rendezvous("/tmp/x") == "file:///tmp/x/rendezvous"
    monkeypatch.setenv("PROBEGATE_RENDEZVOUS_PORT", "29500; rm")
    with pytest.raises(ValueError, match="PROBEGATE_RENDEZVOUS_PORT must be a port number"):
        ranks.rendezvous("/tmp/x")
