"""Meters read from outside the submission's processes (#38): the traffic of record (loopback
counters of the job's network namespace), memory in shared memory and tmpfs, time at a step's cadence."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest
import torch

from probegate_probe import memory_record, time_ratio
from probegate_probe.memory import tmpfs_used_bytes, touched_anonymous_bytes
from probegate_probe.record import TrafficRecord, loopback

HERE = pathlib.Path(__file__).resolve().parent


def test_loopback_counters_are_read_from_proc_net_dev():
    lo = loopback()
    assert lo is not None and lo["bytes"] >= 0 and lo["packets"] >= 0 and isinstance(lo["private"], bool)


def test_a_record_over_its_tolerance_fails_and_names_both_figures():
    r = TrafficRecord(candidate_bytes=900_000, reference_bytes=600_000, tolerance_bytes=22_000, steps=3, private=True)
    assert not r.passed and r.extra_bytes == 300_000
    assert "900,000 bytes" in r.message() and "600,000" in r.message() and "side channel" in r.message()
    assert r.measured()["record_extra_bytes"] == 300_000


def _in_own_netns(*argv):
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("bubblewrap is not installed: no network namespace of the test's own")
    cmd = [bwrap, "--unshare-user", "--unshare-net", "--dev-bind", "/", "/", "--chdir", str(HERE), *argv]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent), str(HERE)]))
    env.pop("PROBEGATE_RENDEZVOUS_PORT", None)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    if done.returncode != 0 and "setting up uid map" in done.stderr + done.stdout:
        pytest.skip("user namespaces are not available here")
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(l for l in done.stdout.splitlines() if l.startswith("RECORD "))
    return json.loads(line[len("RECORD "):])


def test_the_record_passes_the_same_traffic_and_catches_bytes_through_the_store():
    out = _in_own_netns(sys.executable, str(HERE / "_record_cases.py"), "7")
    assert out["private"] is True
    same, store = out["same"], out["store"]
    assert same["passed"], same
    assert abs(same["record_extra_bytes"]) < 4096, same  # the transport's noise: a few hundred bytes
    assert same["values"] == [1.5 * 2, 1.5 * 2]  # all_reduce's sum on 2 ranks: 1 + 2
    assert not store["passed"], store
    # two steps, two ranks' copies (1 MiB), less what the loaded loopback added to the reference's window (a
    # retransmit there: 32 KiB once, on a loaded box): the verdict is the check's, the figure only near the copies
    assert store["record_extra_bytes"] >= 0.9 * 2 * 2 * (1 << 16) * 4, store
    assert "side channel" in store["message"]
    # A forged "ok" does not close the window early: the window ends when the ranks have exited.
    assert not out["forged"]["passed"], out["forged"]
    assert out["forged"]["record_extra_bytes"] >= 0.9 * 2 * 2 * 4 * (1 << 16) * 4, out["forged"]
    # Memory of record, read by the probe's process from the ranks' /proc.
    mem = out["mem_same"]
    assert mem["passed"] and abs(mem["record_extra_bytes"]) < mem["record_tolerance_bytes"], mem
    assert mem["record_candidate_outside_exact"] is True and mem["record_candidate_outside_resets"] == 0, mem
    reset = out["mem_reset"]  # 64 MiB held, freed, then the rank's own high-water mark reset
    assert not reset["passed"] and reset["resets"] >= 1, reset
    assert reset["record_candidate_outside_peak_bytes"] >= 60 << 20, reset
    assert "clear_refs" in reset["message"], reset
    shm = out["mem_shm"]  # 8 MiB a step kept in shared memory: 24 MiB over 3 steps
    assert not shm["passed"] and shm["record_candidate_outside_shmem_bytes"] >= 20 << 20, shm
    assert "shared memory" in shm["message"], shm
    helper = out["mem_helper"]  # 8 MiB a step kept by a process a rank started: 24 MiB over 3 steps
    assert not helper["passed"] and helper["record_candidate_outside_descendants_bytes"] >= 12 << 20, helper
    assert helper["record_candidate_outside_descendants"] >= 1 and "process(es) its ranks started" in helper["message"], helper
    assert out["mem_same"]["record_candidate_outside_descendants_bytes"] == 0, out["mem_same"]


_ROWS = [torch.zeros(2 << 20).share_memory_() for _ in range(2)]  # 16 MiB resident in shared memory


def test_memory_record_counts_scratch_kept_in_shared_memory():
    x = torch.randn(2 << 20)

    def into_shared(v):
        for r in _ROWS:
            r.copy_(v)
        return _ROWS[0].sum()

    rec = memory_record(into_shared, x)
    assert rec.touched_bytes is not None and rec.touched_bytes >= 15 << 20, rec
    assert rec.peak_bytes >= 15 << 20


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
def test_memory_record_counts_files_left_in_dev_shm():
    from probegate_probe.memory import _tmpfs_mounts

    if not any(m == "/dev/shm" or "/dev/shm".startswith(m.rstrip("/") + "/") for m in _tmpfs_mounts() if m != "/"):
        pytest.skip("/dev/shm is not on a memory file system here")
    paths = []

    def cache_in_shm(n):
        for _ in range(2):
            fd, path = tempfile.mkstemp(dir="/dev/shm")
            paths.append(path)
            os.write(fd, b"\1" * n)
            os.close(fd)
        return n

    try:
        rec = memory_record(cache_in_shm, 8 << 20)
    finally:
        for p in paths:
            os.unlink(p)
    assert rec.tmpfs_bytes >= 15 << 20, rec
    assert rec.peak_bytes >= rec.tmpfs_bytes
    assert touched_anonymous_bytes() is not None


def test_time_ratio_pauses_between_calls_at_a_steps_cadence():
    import time

    starts = []

    def fn():
        starts.append(time.perf_counter())

    time_ratio(fn, lambda: None, repeats=3, warmup=1, pause=(0.02, 0.02))
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert min(gaps) >= 0.02  # a pause before every call (the order alternates, ABBA)


def _rank(calls=1, nbytes=4096):
    return {"calls": {"all_reduce": calls}, "by_op": {"all_reduce": nbytes}, "bytes": nbytes, "hidden": 0, "hidden_calls": [], "gaps": []}


def test_differential_traffic_fails_a_head_whose_loopback_carried_more_with_the_same_collectives():
    from probegate_probe._diff_traffic import compare

    counts = {"base": [_rank(), _rank()], "head": [_rank(), _rank()]}
    status, message, measured = compare(counts, wire={"base": 1_000_000, "head": 1_300_000})
    assert status == "failed" and message.startswith("a side channel: the counted collectives are the same")
    assert "+300,000 B" in message and measured["head_wire_bytes"] == 1_300_000
    assert compare(counts, wire={"base": 1_000_000, "head": 1_000_400})[0] == "passed"  # transport noise
    assert compare(counts)[0] == "passed"  # no record (not a namespace of the job's own): the counter alone
    # a segment the loaded kernel retransmitted for the head carried its data twice: one segment's data is excused, not more
    again = {"base": 1_000_000, "head": 1_000_000 + 16 * 1024 + 10_000 + 60_000}
    assert compare(counts, wire=again)[0] == "failed"
    status, _, measured = compare(counts, wire=again, retransmitted={"base": 0, "head": 1})
    assert status == "passed" and measured["head_retransmitted_segments"] == 1
    status, message, _ = compare(counts, wire={"base": 1_000_000, "head": 1_300_000}, retransmitted={"base": 2, "head": 3})
    assert status == "failed" and "1 retransmitted segment included" in message
