"""repo_tests: a repository's own tests, run on a base and a head tree under the kit's meters, test by test
(gloo, the test spawns 2 ranks with torch.multiprocessing.spawn; CPU)."""
import json
import textwrap

from probegate_probe import _gate_tree, _repo_time
from probegate_probe.repo_tests import check_id, gate_tests

COMM = """
import torch
import torch.distributed as dist


def all_reduce_sum(t):
    dist.all_reduce(t)
    return t


def scale(t, factor=2.0):
    scaled = t * factor
    return scaled


_STATE = [0]


def _bump():
    _STATE[0] += 1


def counted():
    return _STATE[0]
"""
TEST = """
import torch
import torch.multiprocessing as mp


def _rank(rank, world, init):
    import torch.distributed as dist
    from rpkg.comm import all_reduce_sum

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    for _ in range(4):
        assert all_reduce_sum(torch.ones(1 << 20))[0].item() == world
    dist.destroy_process_group()


def test_all_reduce_two_ranks(tmp_path):
    mp.spawn(_rank, args=(2, f"file://{tmp_path}/rdv"), nprocs=2, join=True)


def test_plain():
    from rpkg.comm import all_reduce_sum  # noqa: F401


def test_scale():
    from rpkg.comm import _bump, counted, scale

    assert scale(torch.ones(3)).sum().item() > 0  # a weak assertion: a changed factor passes it
    _bump()
    assert counted() == 1
"""
SELECTION = [{"paths": ["rpkg/**", "tests/test_comm.py"], "tests": ["tests/test_comm.py"]}]
CHECKS = {"traffic": {"requirements": ["traffic-preserved"]}, "memory": {"requirements": ["memory-preserved"], "tolerance_bytes": 4 << 20, "tolerance_ratio": 0.1},
          "time": {"requirements": ["time-preserved"], "margin": 3.0, "timed_test_s": 0.5},  # the rank-spawning test is not repeated
          "interface": {"requirements": ["interface-kept"]}, "calls": {"requirements": ["behaviour-preserved"]}}
SPAWNING = "tests/test_comm.py::test_all_reduce_two_ranks"


def _tree(root, comm, test=TEST):
    for rel, text in {"rpkg/__init__.py": "", "rpkg/comm.py": comm, "tests/test_comm.py": test}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return str(root)


def _run(tmp_path, results, head_comm, test=TEST):
    base, head = _tree(tmp_path / "base", COMM, test), _tree(tmp_path / "head", head_comm, test)
    gate_tests(SELECTION, ["rpkg/**"], CHECKS, repetitions=3, base=base, head=head)  # 3: the fewest a time check can decide on
    return {c["id"]: c for c in map(json.loads, results.read_text().splitlines())}


def test_an_honest_head_passes_and_a_head_with_an_extra_all_reduce_and_a_leak_fails_naming_the_numbers(tmp_path, results):
    same = _run(tmp_path / "same", results, COMM.replace("return t", "return t  # same"))
    assert same["interface-kept"]["status"] == "passed"
    traffic = same[check_id("traffic", SPAWNING)]
    assert traffic["status"] == "passed", traffic
    assert traffic["measured"]["base_all_reduce_calls"] == 4  # the spawned ranks' collectives, counted in the ranks
    spawn_memory = same[check_id("memory", SPAWNING)]
    assert spawn_memory["status"] == "passed", spawn_memory
    assert spawn_memory["measured"]["head_outside_descendants"] >= 2, spawn_memory  # the probe's process read the spawned ranks too
    spawn_time = same[check_id("time", SPAWNING)]
    assert spawn_time["status"] == "passed" and spawn_time["measured"]["repeated"] is False, spawn_time
    assert spawn_time["measured"]["base_runs"] == spawn_time["measured"]["head_runs"] == 2  # the two metered sessions a side
    plain_time = same[check_id("time", "tests/test_comm.py::test_plain")]
    assert plain_time["status"] == "passed" and "repeated" not in plain_time["measured"], plain_time  # timed in repetitions
    assert same[check_id("traffic", "tests/test_comm.py::test_plain")]["measured"]["base_bytes_per_run"] == 0
    assert "test-calls" not in same, same.get("test-calls")
    calls = {c["id"].split(".", 1)[1].rsplit("-", 1)[0]: c for c in same.values() if c["id"].startswith("test-calls.")}
    assert calls["rpkg.comm.scale"]["status"] == "passed" and calls["rpkg.comm.scale"]["measured"]["judged_calls"] == 1, calls["rpkg.comm.scale"]
    assert calls["rpkg.comm.counted"]["status"] == "skipped", calls  # module state: its base replay differs from its own record
    assert "rpkg.comm.all_reduce_sum" not in calls  # called only in the ranks the test spawns: not recorded

    results.write_text("")
    bad = COMM.replace("factor=2.0", "factor=3.0").replace("    dist.all_reduce(t)\n", "    dist.all_reduce(t)\n    dist.all_reduce(t.clone())\n    _KEPT.append(t.clone())\n").replace("def all_reduce_sum(t):", "_KEPT = []\n\n\ndef all_reduce_sum(t):")
    worse = _run(tmp_path / "worse", results, bad)
    traffic = worse[check_id("traffic", SPAWNING)]
    assert traffic["status"] == "failed"
    assert traffic["message"].startswith("head's collectives differ from base's per run: +4 all_reduce calls per run (4 → 8)"), traffic["message"]
    assert traffic["location"] == {"path": "tests/test_comm.py", "line": 16}
    scale = next(c for c in worse.values() if c["id"].startswith("test-calls.rpkg.comm.scale-"))
    assert scale["status"] == "failed" and scale["category"] == "functional", scale
    assert scale["message"].startswith("head's rpkg.comm.scale(tensor(3,) float32 [1, 1, 1]) returned tensor(3,) float32 [3, 3, 3] where base's returned tensor(3,) float32 [2, 2, 2]"), scale["message"]
    assert "tests/test_comm.py::test_scale" in scale["message"]
    memory = worse[check_id("memory", SPAWNING)]
    assert memory["status"] == "failed", memory
    assert memory["measured"]["head_peak_bytes"] - memory["measured"]["base_peak_bytes"] >= 12 * 2**20


def test_interface_changes_are_named():
    base = (None, None)
    assert _gate_tree.interface_changes((["a", "b"], [], False, False), (["a", "b", "c"], [], False, False)) is None
    assert _gate_tree.interface_changes((["a", "b"], [], False, False), (["b", "a"], [], False, False)) == "positional parameters (a, b) are now (b, a)"
    assert _gate_tree.interface_changes((["a"], ["op"], False, False), (["a"], [], False, False)) == "keyword parameter op gone"
    assert _gate_tree.interface_changes((["a"], ["op"], False, False), (["a"], [], False, True)) is None
    assert _gate_tree.interface_changes(*base) is None


def test_globs_match_as_the_engine_matches_them():
    assert _gate_tree.matches(["rpkg/**"], "rpkg/a/b.py") and not _gate_tree.matches(["rpkg/*.py"], "rpkg/a/b.py")
    assert _gate_tree.matches(["**/*.py", "!**/test_*.py"], "x.py") and not _gate_tree.matches(["**/*.py", "!**/test_*.py"], "t/test_x.py")
    assert _gate_tree.matches(["a/{b,c}.py"], "a/c.py") and not _gate_tree.matches(["a/{b,c}.py"], "a/d.py")
    assert _gate_tree.selected_tests(SELECTION, ["docs/x.md"])[0] == ["tests/test_comm.py"]


def _rec(*seconds, outcome="passed"):
    return {"outcome": outcome, "metered_s": list(seconds)}


def test_only_tests_short_enough_at_the_base_are_repeated_and_a_slow_head_cannot_opt_out():
    lim = _repo_time.limits({"timed_test_s": 5, "timed_session_s": 8})
    base = {"a": _rec(1.0, 0.9), "b": _rec(6.0, 7.0), "c": _rec(4.0, 4.5), "d": _rec(4.0, 3.5), "e": _rec(0.1), "f": _rec(0.1, outcome="failed")}
    head = {"a": _rec(60.0, 61.0), "b": _rec(6.0), "c": _rec(4.0), "d": _rec(4.0), "e": _rec(0.1), "f": _rec(0.1)}
    timed, untimed = _repo_time.split(list(base), base, head, lim)
    assert timed == ["a", "c", "e"]  # a's head is slow: still timed (the base decides); f failed: not compared
    assert "past the 5 s" in untimed["b"] and "timed_session_s" in untimed["d"] and set(untimed) == {"b", "d"}


def test_a_test_too_long_to_repeat_fails_only_a_gross_slowdown(results):
    lim = _repo_time.limits({})
    ok = _repo_time.check_gross("test-time.x", "t::x", _rec(20.0, 22.0), _rec(50.0, 40.0), "it is long", lim)
    assert ok["status"] == "passed" and ok["measured"]["ratio"] == round(40.0 / 22.0, 3), ok
    bad = _repo_time.check_gross("test-time.x", "t::x", _rec(20.0, 22.0), _rec(90.0, 70.0), "it is long", lim)
    assert bad["status"] == "failed" and bad["message"].startswith("t::x took 70.0 s at the head against 22.0 s at the base (3.18×"), bad
    tiny = _repo_time.check_gross("test-time.x", "t::x", _rec(0.5, 0.6), _rec(3.0, 4.0), "it is long", lim)
    assert tiny["status"] == "passed"  # 5× but only 2.4 s more: start-up noise of a rank-spawning test can do that


def test_the_recorder_wraps_references_the_tree_took_and_gives_up_on_objects(tmp_path, monkeypatch):
    import sys

    import torch

    (tmp_path / "rpkg_rec").mkdir()
    (tmp_path / "rpkg_rec" / "__init__.py").write_text("")
    (tmp_path / "rpkg_rec" / "ops.py").write_text("def double(t):\n    return t * 2\n\n\ndef describe(obj):\n    return str(type(obj))\n")
    (tmp_path / "user_rec.py").write_text("from rpkg_rec.ops import double\n\n\ndef use(t):\n    return double(t)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import user_rec
        from probegate_probe._repo_calls import TRIES_PER_FUNCTION, Recorder

        rec = Recorder(str(tmp_path), ["rpkg_rec/**"])
        rec.preload()
        rec.test = "t::x"
        user_rec.use(torch.ones(2))  # through the reference user_rec took at import
        import rpkg_rec.ops as ops

        for _ in range(TRIES_PER_FUNCTION + 5):
            ops.describe(object())  # not plain: a few copy attempts, then no more
        ops.describe("plain")  # past the tries: not recorded either
        assert [(c["name"], c["test"]) for c in rec.calls] == [("double", "t::x")]
        assert rec._tries["rpkg_rec.ops:describe"] == TRIES_PER_FUNCTION
        assert torch.equal(rec.calls[0]["result"], torch.full((2,), 2.0))
    finally:
        for name in ("user_rec", "rpkg_rec", "rpkg_rec.ops"):
            sys.modules.pop(name, None)


def test_a_capped_selection_covers_every_file_and_function_before_a_second_case():
    ids = [f"tests/a.py::test_p[{i}]" for i in range(6)] + ["tests/a.py::test_q", "tests/b.py::test_r[0]", "tests/b.py::test_r[1]", "tests/c.py::test_s"]
    assert _gate_tree.spread(ids, 4) == ["tests/a.py::test_p[0]", "tests/a.py::test_q", "tests/b.py::test_r[0]", "tests/c.py::test_s"]
    assert _gate_tree.spread(ids, 6) == ["tests/a.py::test_p[0]", "tests/a.py::test_p[1]", "tests/a.py::test_q", "tests/b.py::test_r[0]", "tests/b.py::test_r[1]", "tests/c.py::test_s"]
    assert _gate_tree.spread(ids, 99) == ids


_HIDE = """
    import time

    scratch = torch.ones(16 << 20)  # 64 MiB for 0.3 s, then the process's own high-water mark reset
    time.sleep(0.3)
    del scratch
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
"""
HIDDEN_PEAK = COMM.replace("def scale(t, factor=2.0):\n", "def scale(t, factor=2.0):" + _HIDE).replace("def all_reduce_sum(t):\n", "def all_reduce_sum(t):" + _HIDE)
STATELESS = TEST.replace("    _bump()\n    assert counted() == 1\n", "")  # test_scale passes in both metered sessions


def test_a_peak_the_head_hides_from_its_own_processes_is_in_the_memory_of_record(tmp_path, results):
    hidden = _run(tmp_path, results, HIDDEN_PEAK, STATELESS)
    memory = hidden[check_id("memory", "tests/test_comm.py::test_scale")]
    m = memory["measured"]
    assert m["head_peak_bytes"] - m["base_peak_bytes"] < 4 << 20, memory  # the meter in the head's process was blinded
    assert memory["status"] == "failed" and memory["message"].startswith("memory of record: head's busiest rank held"), memory
    assert m["head_outside_peak_bytes"] - m["base_outside_peak_bytes"] >= 60 << 20 and m["head_outside_resets"] >= 1, memory
    ranks = hidden[check_id("memory", SPAWNING)]  # the same trick in each spawned rank: their private memory, read from outside
    m = ranks["measured"]
    assert m["head_peak_bytes"] - m["base_peak_bytes"] < 4 << 20, ranks
    assert ranks["status"] == "failed" and "in 2 process(es) its ranks started" in ranks["message"], ranks
    assert m["head_outside_descendants_bytes"] - m["base_outside_descendants_bytes"] >= 100 << 20, ranks


def test_a_head_that_closes_the_kits_channel_fails_its_memory_check(tmp_path, results):
    closes = COMM.replace("def scale(t, factor=2.0):\n", """def scale(t, factor=2.0):
    import gc
    import os
    import socket

    for o in gc.get_objects():  # the window's channel: no figure of record for this test
        if isinstance(o, socket.socket) and o.family == socket.AF_UNIX and o.fileno() >= 0 and str(o.getpeername()).endswith(".sock"):
            os.close(o.fileno())
""")
    lost = _run(tmp_path, results, closes, STATELESS)
    memory = lost[check_id("memory", "tests/test_comm.py::test_scale")]
    assert memory["status"] == "failed" and memory["measured"]["head_unread_runs"] == 2, memory
    assert memory["message"].startswith("tests/test_comm.py::test_scale: the probe's process could not read the head's memory of record in 2 of 2"), memory


def test_a_window_is_opened_only_for_its_own_process_and_a_second_one_cannot_lower_its_figure(tmp_path):
    import os
    import time

    from probegate_probe import _test_window

    with _test_window.TestWindows(str(tmp_path)) as windows:
        c = _test_window.client(str(tmp_path))
        key = f"{os.getpid()}-0|t::x"
        with c.around(key):
            scratch = bytearray(48 << 20)  # touched: zero-filled by the kernel on first write
            scratch[::4096] = b"x" * len(scratch[::4096])
            time.sleep(0.1)
            del scratch
        first = windows.figures[key].peak_bytes
        assert first >= 40 << 20, first
        forged = _test_window.client(str(tmp_path))
        with forged.around(key):  # a short window of the same test, opened by code under test
            pass
        assert windows.figures[key].peak_bytes == first
        other = _test_window.client(str(tmp_path))
        with other.around("1-0|t::y"):  # a session another process named: refused
            pass
        assert "1-0|t::y" not in windows.figures
        for k in (c, forged, other):
            k.close()
    assert _test_window.client(str(tmp_path)) is None  # the run is over: no channel
