"""Head against base, test by test: the probe `probegate gate init` generates runs the repository's own
tests on both trees under the kit's meters and compares each test's figures.

One `differential()` run (one process per side, interleaved, each side importing only its own tree)
runs pytest in-process on the selected tests; a plugin measures each test where it runs:
- traffic: collectives and bytes of the test's process (a CollectiveCounter around the test) and of
  every process it starts (`spawn_meter`: the ranks of `mp.spawn`, and Python processes started through
  `subprocess` or torchrun), compared
  exactly with `Sides.check_traffic` (the busiest process per collective);
- memory: the peak of the test's process and of each process it starts (`peak_memory`), the largest
  of them, compared with `Sides.check_memory`; beside it the memory of record, read by the probe's
  process from the test process's /proc while the test runs (`_test_window`), which the head cannot lower;
- time: the test's wall time over the timed repetitions, with `Sides.check_time` (medians, a rank
  test and a margin), for the tests short enough to repeat (`_repo_time`: the others get a gross check).
Two differential() runs: the metered one (traffic, memory and each test's seconds; two pytest sessions a
side, the second warm, so a test's peak is the lesser of two), then the timed one, only over the tests
short enough, never metered (counting costs time). A gate's probe runs 2 full sessions a side, plus the
short tests' 2 warm-ups and `repetitions`.
Tests are collected on the base (what the head is measured against); a test that does not pass on
both sides is left to the official tests, said as a skipped check. Plus `interface-kept`: each gated
module's public functions and classes at the base are still there at the head, taking what they took.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from . import _gate_tree, _repo_calls, _repo_time, _test_window, spawn_meter
from ._repo_interface import check_interfaces
from .differential import Sides, base_tree, differential, traffic_figures
from .emit import emit, slug_id
from .location import workspace

_MAX_TESTS = 24
METERED_SESSIONS = 2  # the second is warm: a test's peak is the lesser of the two (the first test imports the tree)


def check_id(kind: str, nodeid: str) -> str:
    """`test-traffic.test_comm.py-test_sum-1a2b3c4d`: stable per test, within the check id pattern."""
    file, _, rest = nodeid.partition("::")
    short = "-".join([file.rsplit("/", 1)[-1]] + ([rest.replace("::", "-")] if rest else []))
    return slug_id(f"test-{kind}", short, key=nodeid, always=True)


def _plugin(metered, folder, session, recorder=None, windows=None):
    import pytest
    from _pytest.runner import runtestprotocol

    from .collectives import CollectiveCounter
    from .memory import peak_memory

    class PerTest:
        def __init__(self):
            self.tests = {}

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_protocol(self, item, nextitem):
            item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
            if recorder is not None:
                recorder.test = item.nodeid
                recorder.scan()
            rec = {}
            t0 = time.perf_counter()
            if metered:
                window = windows.around(f"{session}|{item.nodeid}") if windows is not None else contextlib.nullcontext()
                with spawn_meter.metering(folder, f"{session}|{item.nodeid}", os.getcwd()), window:
                    with CollectiveCounter() as counter:
                        reports, rec["peak"] = peak_memory(runtestprotocol, item, nextitem=nextitem)
                rec.update(traffic_figures(counter, os.getcwd()))
            else:
                reports = runtestprotocol(item, nextitem=nextitem)
            rec["seconds"] = time.perf_counter() - t0
            rec["outcome"] = _outcome(reports)
            item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
            self.tests[item.nodeid] = rec
            return True

    return PerTest()


def _outcome(reports) -> str:
    if any(r.failed for r in reports):
        return "failed"
    call = next((r for r in reports if r.when == "call"), None)
    if call is None or call.skipped or hasattr(call, "wasxfail"):
        return "skipped"
    return "passed"


_sessions = iter(range(1 << 30))


def scenario(rank, world, rep, nodeids, folder, pytest_args=(), metered=0, gated=None):
    """One side's run of the tests, in this side's tree (differential made it the cwd): pytest in this
    process, one record file per session. `metered`: how many metered sessions (traffic, peaks, seconds)
    this call runs; 0: one session, only timed (the timed run's repetitions and warm-ups). `gated`: the
    gated globs whose calls the first metered session records (`_repo_calls`); returns the record."""
    import pytest

    recorder = None
    for i in range(max(1, metered)):
        session = f"{os.getpid()}-{next(_sessions)}"
        if metered and gated and i == 0:
            recorder = _repo_calls.Recorder(os.getcwd(), gated)
            recorder.preload()
        windows = _test_window.client(folder) if metered else None
        plugin = _plugin(metered > 0, folder, session, recorder if i == 0 else None, windows)
        try:
            code = pytest.main(["-q", "-p", "no:cacheprovider", *pytest_args, *nodeids], plugins=[plugin])
        finally:
            if windows is not None:
                windows.close()
        if recorder is not None:
            recorder.active = False
        with open(os.path.join(folder, f"session-{time.monotonic_ns()}-{session}.json"), "w") as fh:
            json.dump({"tree": os.path.realpath(os.getcwd()), "rep": rep, "metered": metered > 0, "session": session, "exit": int(code),
                       "tests": plugin.tests}, fh, default=str)
    return None if recorder is None else {"calls": recorder.calls, "paths": recorder.paths()}


def collect(tree, files, pytest_args=(), timeout=600):
    """The test ids pytest collects from `files` in `tree` (a separate process: nothing is imported here)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROBEGATE_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *pytest_args, *files],
                       cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    ids = [line.strip() for line in r.stdout.splitlines() if "::" in line and not line.startswith(" ")]
    tail = (r.stdout.strip().splitlines() or [""])[-1]
    return ids, (None if ids else f"pytest collected nothing from {', '.join(files)} (exit {r.returncode}: {tail[:300]})")


def _records(folder):
    sessions = []
    for name in sorted(os.listdir(folder)):
        if name.startswith("session-"):
            with open(os.path.join(folder, name)) as fh:
                sessions.append(json.load(fh))
    children = {}
    for c in spawn_meter.read_records(folder):
        children.setdefault(c["label"], []).append(c)
    return sessions, children


def _per_test(sessions, children, trees, figures=None):
    """side -> nodeid -> {"counts": [figures per process], "peaks", "outside", "metered_s", "times", "outcome"}, from
    the run records: counts from the first metered session, peaks, memory of record (`figures`, the probe's
    own readings: None where a test's window never closed) and seconds from each, times from the timed
    run's repetitions (its warm-ups, rep 0, are not counted)."""
    side_of = {os.path.realpath(t): s for s, t in trees.items()}
    out = {"base": {}, "head": {}}
    for s in sessions:
        side = side_of.get(s["tree"])
        if side is None:
            continue
        for nodeid, rec in s["tests"].items():
            t = out[side].setdefault(nodeid, {"counts": None, "peaks": [], "outside": [], "metered_s": [], "times": [], "outcome": rec["outcome"]})
            if s.get("metered", s["rep"] == 0):
                kids = children.get(f"{s['session']}|{nodeid}", [])
                t["outside"].append((figures or {}).get(f"{s['session']}|{nodeid}"))
                peak = max([rec.get("peak") or 0] + [k.get("peak") or 0 for k in kids])
                t["peaks"].append(peak)
                t["metered_s"].append(rec["seconds"])
                if t["counts"] is None:  # the counted run: the first metered session
                    t["counts"] = [rec] + kids
                    t["processes"] = 1 + len(kids)
                if rec["outcome"] != "passed":  # a test that fails in either metered session is not compared
                    t["outcome"] = rec["outcome"]
            elif s["rep"] != 0:
                t["times"].append(rec["seconds"])
    return out


def _location(nodeid, head):
    path = nodeid.split("::")[0]
    name = re.sub(r"\[.*\]$", "", nodeid.split("::")[-1])
    try:
        with open(os.path.join(head, path), encoding="utf-8") as fh:
            for i, line in enumerate(fh, 1):
                if re.match(rf"\s*(async\s+)?def {re.escape(name)}\b", line):
                    return {"path": path, "line": i}
    except OSError:
        return None
    return {"path": path, "line": 1}


def gate_tests(selection, gated, checks, repetitions=5, max_tests=_MAX_TESTS, timeout=900, pytest_args=(), base=None, head=None):
    """The generated probe's whole work. `selection`: task.yml's official.select.fromPaths; `gated`: the
    gated path globs; `checks`: {"traffic"|"memory"|"time"|"interface": {"requirements": [...], tolerances}};
    "time" may hold `_repo_time`'s limits (timed_test_s, timed_session_s, gross_margin, gross_extra_s).
    `timeout`: seconds one pytest session of a side may take."""
    trees = {"base": base or base_tree(), "head": head or str(workspace())}
    check_interfaces(gated, trees, checks.get("interface", {}).get("requirements"))
    positive = [g for e in selection for g in e["paths"] if not g.startswith("!")]
    changed = _gate_tree.changed_paths(trees["base"], trees["head"], positive)
    files, _ = _gate_tree.selected_tests(selection, changed)
    files = [f for f in files if os.path.exists(os.path.join(trees["base"], f.split("::")[0]))]
    nodeids, problem = collect(trees["base"], files, pytest_args) if files else ([], "no selected test file is in the base")
    if problem:
        return emit("tests-differential", "functional", "skipped", f"nothing to compare: {problem}")
    if len(nodeids) > max_tests:
        kept = _gate_tree.spread(nodeids, max_tests)
        chosen = set(kept)
        out = [n for n in nodeids if n not in chosen]
        emit("tests-differential.more", "functional", "skipped", f"{len(nodeids)} tests selected, {max_tests} compared: each selected file in turn, each test "
             f"function before a second case of any; left out: {', '.join(out[:20])}{' …' if len(out) > 20 else ''}")
        nodeids = kept
    folder = tempfile.mkdtemp(prefix="probegate-repo-tests-")
    try:
        return _measure(nodeids, folder, trees, gated, checks, repetitions, timeout, pytest_args)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _measure(nodeids, folder, trees, gated, checks, repetitions, timeout, pytest_args):
    """The metered run, the replay of the base's calls, the timed run of the short tests; then a verdict per test."""
    run = dict(world_size=1, base=trees["base"], head=trees["head"])
    calls = checks.get("calls")
    try:
        with _test_window.TestWindows(folder) as windows:
            metered = differential(scenario, repetitions=1, measure=("traffic",), args=(nodeids, folder, tuple(pytest_args), METERED_SESSIONS,
                                   tuple(gated) if calls is not None else None), timeout=timeout * METERED_SESSIONS, **run)
    except Exception as exc:
        return emit("tests-differential", "functional", "error", f"the selected tests could not be run on both trees under the meters: {type(exc).__name__}: {str(exc)[:1500]}")
    if calls is not None:
        _replay(metered.counts["base"][0].get("outputs"), calls, timeout, run)
    per = _per_test(*_records(folder), trees, windows.figures)
    lim = _repo_time.limits(checks.get("time", {}))
    timed, untimed = _repo_time.split(nodeids, per["base"], per["head"], lim)
    if timed and "time" in checks:
        try:
            differential(scenario, repetitions=repetitions, measure=("time",), args=(timed, folder, tuple(pytest_args), 0), timeout=timeout, **run)
            per = _per_test(*_records(folder), trees, windows.figures)
        except Exception as exc:
            emit("tests-differential.time", "time", "error", f"the {len(timed)} tests short enough to repeat could not be timed on both trees: {type(exc).__name__}: {str(exc)[:1500]}")
    for nodeid in nodeids:
        _judge(nodeid, per["base"].get(nodeid), per["head"].get(nodeid), checks, trees["head"], untimed.get(nodeid), lim)
    return per


def _replay(record, calls, timeout, run):
    """The base's recorded calls (its side's return value: the head cannot rewrite it), replayed on both trees."""
    if not record or not record["calls"]:
        return emit("test-calls", "functional", "skipped", "no call into the gated modules' public functions with plain arguments and result was "
                    "recorded in the tests' own process at the base (calls inside spawned ranks, with a process group, are not replayable alone)")
    base = _repo_calls.replay_tree(run["base"], record["calls"], record["paths"], timeout)  # read before the head's code runs
    head = _repo_calls.replay_tree(run["head"], record["calls"], record["paths"], timeout)
    return _repo_calls.check_calls(record["calls"], base, head, calls, calls.get("requirements"))


def _read_in_every_run(t) -> bool:
    """The probe's process read this side's memory of record in each of its metered runs."""
    return bool(t.get("outside")) and all(f is not None for f in t["outside"])


def _judge(nodeid, b, h, checks, head, untimed, lim):
    loc = _location(nodeid, head)
    if not b or b["outcome"] != "passed":
        return emit(check_id("run", nodeid), "functional", "skipped", f"{nodeid} {b['outcome'] if b else 'did not run'} at the base: nothing to compare the head with", loc)
    if not h or h["outcome"] != "passed":
        return emit(check_id("run", nodeid), "functional", "skipped", f"{nodeid} {h['outcome'] if h else 'did not run'} at the head (the official tests judge that); its figures are not compared", loc)
    s = Sides(world_size=max(b["processes"], h["processes"]), counts={"base": b["counts"], "head": h["counts"]},
              peaks={"base": min(b["peaks"]), "head": min(h["peaks"])}, times={"base": b["times"], "head": h["times"]},
              outside={side: min(t["outside"], key=lambda f: f.peak_bytes) for side, t in (("base", b), ("head", h))}
              if _read_in_every_run(b) and _read_in_every_run(h) else {})  # the lesser run, as the in-process peak
    t, m, tm = checks.get("traffic", {}), checks.get("memory", {}), checks.get("time")
    s.check_traffic(check_id("traffic", nodeid), per="run", requirements=t.get("requirements"), location=loc)
    if _read_in_every_run(b) and not _read_in_every_run(h):
        lost = sum(f is None for f in h["outside"])
        emit(check_id("memory", nodeid), "memory", "failed", f"{nodeid}: the probe's process could not read the head's memory of record in {lost} of "
             f"{len(h['outside'])} metered runs (the test's window on the kit's channel never closed), where it read the base's in every run: "
             "a head whose code closes or writes on the channel cannot be measured from outside", loc, {"head_unread_runs": lost}, m.get("requirements"))
    else:
        s.check_memory(check_id("memory", nodeid), tolerance_bytes=m.get("tolerance_bytes", 4 << 20), tolerance_ratio=m.get("tolerance_ratio", 0.1),
                       requirements=m.get("requirements"), location=loc)
    if tm is None:
        return None
    if untimed is not None:
        return _repo_time.check_gross(check_id("time", nodeid), nodeid, b, h, untimed, lim, tm.get("requirements"), loc)
    if b["times"] and h["times"]:
        return s.check_time(check_id("time", nodeid), margin=tm.get("margin", 1.5), requirements=tm.get("requirements"), location=loc)
    return emit(check_id("time", nodeid), "time", "skipped", f"{nodeid} has no timed repetitions on both sides (the timed run did not finish: see tests-differential.time)", loc)
