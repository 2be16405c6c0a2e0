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


WORKER = """
import os, sys
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
kept = [torch.ones(int(os.environ.get("KEEP_MIB", "0")) * 2**18)]  # touched float32
for _ in range(3):
    dist.all_reduce(torch.ones(1024))
dist.destroy_process_group()
"""


def _by_label(folder):
    by = {}
    for r in spawn_meter.read_records(str(folder)):
        by.setdefault(r["label"], []).append(r)
    return by


def _run_torchrun(tmp_path, folder):
    import subprocess
    import sys

    with spawn_meter.metering(str(folder), "torchrun"):
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(tmp_path / "worker.py")],
                       check=True, cwd=tmp_path, timeout=300)


def _run_ranks(tmp_path, folder, label, keep_mib):
    import subprocess
    import sys

    with spawn_meter.metering(str(folder), label):
        env = dict(os.environ, KEEP_MIB=str(keep_mib), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), WORLD_SIZE="2")
        procs = [subprocess.Popen([sys.executable, str(tmp_path / "worker.py")], env=dict(env, RANK=str(r)), cwd=tmp_path) for r in range(2)]
        assert [p.wait(timeout=300) for p in procs] == [0, 0]


def _assert_ranks(records):
    assert len(records) == 2, records
    for r in records:
        assert r["calls"] == {"all_reduce": 3} and r["by_op"] == {"all_reduce": 3 * 4096}, r
        assert r["launched"] == "subprocess" and r["exit"] is None and r["hidden"] == 0


def test_ranks_a_test_starts_with_subprocess_are_metered(tmp_path):
    import subprocess
    import sys

    folder = tmp_path / "rec"
    folder.mkdir()
    (tmp_path / "worker.py").write_text(WORKER)
    env_before = dict(os.environ)
    _run_ranks(tmp_path, folder, "plain", 0)
    _run_ranks(tmp_path, folder, "leaky", 24)
    assert dict(os.environ) == env_before  # the window put PYTHONPATH and its settings back
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "sitecustomize.py").write_text("import os\nos.environ['OWN_SITE'] = 'ran'\n")
    with spawn_meter.metering(str(folder), "no-torch"):
        # A process that never imports torch writes nothing; a repository's own sitecustomize still runs.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.environ["PYTHONPATH"], str(tmp_path / "own")]))
        plain = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('OWN_SITE'))"], env=env,
                               capture_output=True, text=True, check=True)
        assert plain.stdout.strip() == "ran"
    by = _by_label(folder)
    assert sorted(by) == ["leaky", "plain"]
    _assert_ranks(by["plain"])
    _assert_ranks(by["leaky"])
    assert min(r["peak"] for r in by["leaky"]) - max(r["peak"] for r in by["plain"]) >= 20 * 2**20, by


def _torch2_python():
    """An interpreter of the pack's environments with torch 2 and pytest (CI builds them before the tests)."""
    import glob
    import json

    root = os.environ.get("PROBEGATE_ENV_DIR", "/var/cache/probegate/envs")
    for manifest in sorted(glob.glob(os.path.join(root, "*", "probegate-env.json"))):
        env = os.path.dirname(manifest)
        with open(manifest) as fh:
            torch_version = json.load(fh).get("torch") or ""
        if torch_version.startswith("2.") and glob.glob(os.path.join(env, "lib", "python3*", "site-packages", "pytest")):
            return os.path.join(env, "bin", "python")
    return None


def test_workers_a_torchrun_launcher_starts_are_metered(tmp_path):
    if torch.__version__ < "2":  # torch 1.13's torchrun fails by itself on Python 3.11 (its redirects default is None)
        import subprocess

        python = _torch2_python()
        if python is None:
            pytest.skip("torch 1.13's torchrun does not run on Python 3.11, and no environment with torch 2 and pytest is built")
        here = f"{__file__}::test_workers_a_torchrun_launcher_starts_are_metered"
        r = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", here], cwd=os.path.dirname(os.path.dirname(__file__)),
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-4000:] + r.stderr[-2000:]
        return
    folder = tmp_path / "rec"
    folder.mkdir()
    (tmp_path / "worker.py").write_text(WORKER)
    _run_torchrun(tmp_path, folder)
    (records,) = _by_label(folder).values()
    workers = [r for r in records if r["calls"]]
    assert len(records) == 3, records  # the launcher too, with no collective
    _assert_ranks(workers)


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
