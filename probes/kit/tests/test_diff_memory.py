"""differential()'s memory of record (#38 item 2): a head that hides memory from the meter in its ranks
is caught by the figures the probe's process reads from the ranks' /proc (gloo, 2 ranks, CPU)."""
import os
import shutil
import tempfile

import pytest

from probegate_probe.differential import Sides, differential
from probegate_probe._outside import OutsideFigures
from test_differential import BASE_LIB, _lines, _scenario, _trees  # the same two trees and scenario

# 64 MiB of scratch held 50 ms, freed, then the rank's own high-water mark reset: peak_memory in the
# rank reads its figure from that mark.
RESET_HEAD = BASE_LIB.replace("    return t\n", """    scratch = torch.ones(16 << 20)
    import time
    time.sleep(0.05)
    del scratch
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    return t
""")

# 24 MiB a call kept in files of a memory file system: in no process's resident set.
SHM_HEAD = BASE_LIB.replace("    return t\n", """    import os, uuid
    d = os.environ["PGDIFF_SHM_DIR"]
    with open(os.path.join(d, uuid.uuid4().hex), "wb") as fh:
        fh.write(bytes(24 << 20))
    return t
""")


def test_a_head_that_resets_its_own_high_water_mark_fails_the_memory_check(tmp_path, results):
    t = _trees(tmp_path, RESET_HEAD)
    sides = differential(_scenario, world_size=2, base=t["base"], head=t["head"], measure=("memory",))
    sides.check_memory("peak", tolerance_bytes=8 << 20, tolerance_ratio=0.1)
    got = _lines(results)["peak"]
    m = got["measured"]
    assert got["status"] == "failed", got
    assert m["head_peak_bytes"] - m["base_peak_bytes"] < 8 << 20, m  # the rank's own meter was blinded
    assert m["head_outside_peak_bytes"] - m["base_outside_peak_bytes"] >= 56 << 20, m
    assert "memory of record" in got["message"] and "in-process meter does not see" in got["message"]


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
def test_a_head_that_keeps_files_in_dev_shm_fails_the_memory_check(tmp_path, results, monkeypatch):
    shm = tempfile.mkdtemp(dir="/dev/shm", prefix="pgdiff-")
    monkeypatch.setenv("PGDIFF_SHM_DIR", shm)
    try:
        t = _trees(tmp_path, SHM_HEAD)
        sides = differential(_scenario, world_size=2, base=t["base"], head=t["head"], measure=("memory",))
        sides.check_memory("peak", tolerance_bytes=8 << 20, tolerance_ratio=0.1)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    got = _lines(results)["peak"]
    if got["measured"].get("head_outside_tmpfs_bytes", 0) == 0:
        pytest.skip("/dev/shm is not a memory file system this process can see (statvfs)")
    assert got["status"] == "failed" and "memory file systems 240.0 MiB" in got["message"], got  # 5 calls (a warm-up, the peak call and 3 for growth), 2 ranks


def test_identical_trees_agree_in_the_memory_of_record(tmp_path, results):
    t = _trees(tmp_path, BASE_LIB)
    sides = differential(_scenario, world_size=2, base=t["base"], head=t["head"], measure=("memory",))
    sides.check_memory("peak")
    got = _lines(results)["peak"]
    assert got["status"] == "passed", got
    assert got["measured"]["base_outside_exact"] is True and "head_outside_peak_bytes" in got["measured"]


def test_memory_the_rank_meter_saw_on_both_sides_is_not_counted_twice(results):
    out = lambda peak: OutsideFigures(peak_bytes=peak)  # noqa: E731
    # A head that needs 40 MiB more, seen by its rank's meter too: the in-rank check says it, once.
    Sides(world_size=1, peaks={"base": 100 << 20, "head": 140 << 20}, outside={"base": out(300 << 20), "head": out(340 << 20)}).check_memory("seen")
    # Outside figures 40 MiB apart while the rank meters agree: memory kept where the meter does not look.
    Sides(world_size=1, peaks={"base": 100 << 20, "head": 100 << 20}, outside={"base": out(300 << 20), "head": out(340 << 20)}).check_memory("unseen")
    # Within the allowance (5 % of 300 MiB): passes.
    Sides(world_size=1, peaks={"base": 100 << 20, "head": 100 << 20}, outside={"base": out(300 << 20), "head": out(310 << 20)}).check_memory("noise")
    got = _lines(results)
    assert got["seen"]["status"] == "failed" and got["seen"]["message"].startswith("head holds 40.0 MiB more")
    assert got["unseen"]["status"] == "failed" and "memory of record" in got["unseen"]["message"]
    assert got["noise"]["status"] == "passed"


# 8 MiB kept every call (a cache that is never released): under a 48 MiB peak allowance for a call,
# plain as a slope over the calls after it.
LEAK_HEAD = BASE_LIB.replace("    return t\n", """    _KEPT.append(torch.ones(2 << 20))
    return t


_KEPT = []
""")


def test_a_head_that_keeps_memory_every_call_fails_on_its_growth(tmp_path, results):
    t = _trees(tmp_path, LEAK_HEAD)
    sides = differential(_scenario, world_size=2, base=t["base"], head=t["head"], measure=("memory",), steps=4)
    sides.check_memory("peak", tolerance_bytes=48 << 20, tolerance_ratio=0.1)
    got = _lines(results)["peak"]
    m = got["measured"]
    assert got["status"] == "failed", got
    assert 7 << 20 <= m["head_growth_bytes_per_call"] - m["base_growth_bytes_per_call"] <= 9 << 20, m
    assert got["message"].startswith("head keeps 8.0 MiB more per call than base (2.0 MiB per step over 4 steps a call)"), got["message"]


def test_identical_trees_grow_alike(tmp_path, results):
    t = _trees(tmp_path, BASE_LIB)
    sides = differential(_scenario, world_size=2, base=t["base"], head=t["head"], measure=("memory",))
    sides.check_memory("peak")
    m = _lines(results)["peak"]["measured"]
    assert _lines(results)["peak"]["status"] == "passed"
    assert abs(m["head_growth_bytes_per_call"] - m["base_growth_bytes_per_call"]) < m["allowed_growth_bytes_per_call"] / 2, m
