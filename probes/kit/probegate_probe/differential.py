"""Head against base: one scenario run on the PR's base tree and on its head, side by side.

A repository gate's probe states a scenario once (a module-level function of rank, world size and
a repetition index) and `differential()` runs it on both trees, in fresh rank processes of their
own, interleaved (base, head, head, base, …) so drift and neighbours hit both alike. Each side
imports the code under test from its own tree only. What it compares (PROBES.md, "Head against
base"): traffic exactly (bytes and calls per collective, and the collectives the counter could not
see: `_diff_traffic.py`), memory as a difference of peaks, time as a ratio of medians with a rank
test and a stated margin, outputs bitwise or within a tolerance.
Every check reports both sides' numbers, not only the verdict.

Rank processes start from the kit's forkserver, which has imported torch once: the two sides
share that start-up, so a differential probe costs far less than twice one side.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Optional

from . import _conf, _diff_functions, _diff_memory, _diff_outputs, _diff_scenario, _diff_time, _diff_traffic
from ._diff_functions import changed_functions  # noqa: F401 - exported: the PR's functions, to time on their own
from ._diff_time import mann_whitney_greater  # noqa: F401 - exported
from ._outside import Window
from ._diff_traffic import traffic_figures  # noqa: F401 - for probes that count inside their scenario (megatron's gate)
from .emit import emit
from .ranks import guard_child_import, run_ranks, world_size as default_world_size
from .record import loopback, payload_bytes

BASE_TREE_ENV = "PROBEGATE_BASE_TREE"
SIDES = ("base", "head")


def base_tree() -> str:
    """The PR's base tree (read-only), which the engine mounts for a repository gate's probes."""
    path = _conf.get(BASE_TREE_ENV)  # the kit's copy: the guard takes PROBEGATE_* out of os.environ
    if not path or not os.path.isdir(path):
        raise RuntimeError(f"${BASE_TREE_ENV} is not set: differential probes run only in a repository gate (task base: {{pr: true}})")
    return path


def _head_tree() -> str:
    from .location import workspace

    return str(workspace())


def _use_tree(tree: str, other: str) -> None:
    """Makes `tree` the only copy of the code under test that this process can import."""
    real_other = os.path.realpath(other)

    def inside(path: str) -> bool:
        real = os.path.realpath(path)
        return real == real_other or real.startswith(real_other + os.sep)

    sys.path[:] = [tree] + [p for p in sys.path if not inside(p or os.getcwd())]
    for name, mod in list(sys.modules.items()):
        file = getattr(mod, "__file__", None) or ""
        if file and inside(file):
            del sys.modules[name]
    os.chdir(tree)


def _side_worker(rank, world, tree, other, scenario, mode, reps, args, limit=None, first=1, functions=()):
    _use_tree(tree, other)
    if mode == "count":
        from .collectives import CollectiveCounter

        with CollectiveCounter(root=tree) as counter:
            out = scenario(rank, world, 0, *args)
        return {"outputs": out, **_diff_traffic.traffic_figures(counter, tree)}
    if mode == "memory":
        from .memory import peak_memory

        # Warm first: the imports and first-use set-up are the process's footprint, not the step's peak (a
        # tree's import is ~200 MiB, whose share of an allowance hid a 20 MiB regression). What the first call
        # keeps is still in the memory of record, read from outside over the whole run (Sides.outside).
        scenario(rank, world, 0, *args)
        _, peak = peak_memory(scenario, rank, world, 0, *args)
        return {"peak": peak, "retained": _diff_memory.retained_after_calls(scenario, rank, world, args)}
    timers = _diff_functions.FunctionTimers(functions) if functions else None
    scenario(rank, world, 0, *args)  # warm-up: imports, caches, first-touch allocations
    if timers is not None:
        timers.take()
    times, inside = [], []
    start = time.perf_counter()
    for rep in range(first, first + reps):  # distinct inputs over the whole run (round 2 goes on from round 1): a cache of an earlier answer does not help
        if limit is not None and times and _agree_to_stop(time.perf_counter() - start > limit):
            break  # the side is far past the base already: more repetitions only cost the runner time
        t0 = time.perf_counter()
        scenario(rank, world, rep, *args)
        times.append(time.perf_counter() - t0)
        if timers is not None:
            inside.append(timers.take())
    return {"times": times, "asked": reps, "functions": inside}


def _agree_to_stop(mine: bool) -> bool:
    """Every rank stops at the same repetition (one stopping alone would leave the others waiting in a
    collective): the flags are max-reduced, outside the timed window."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return mine
    flag = torch.tensor([1.0 if mine else 0.0])
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())


@dataclass
class Sides:
    """What `differential()` measured on each side; `check_*` turn it into checks."""

    world_size: int
    counts: dict = field(default_factory=dict)  # side -> [per-rank count result]
    peaks: dict = field(default_factory=dict)  # side -> max peak bytes over ranks
    times: dict = field(default_factory=dict)  # side -> [seconds per repetition, slowest rank]
    wall: dict = field(default_factory=dict)  # side -> seconds of wall time spent on it
    stopped: dict = field(default_factory=dict)  # side -> (repetitions measured, asked) when its time cap stopped it
    # side -> (its counted run's wall s, the base's, the cap) when that run alone was past the time cap: no timed rounds ran
    capped: dict = field(default_factory=dict)
    steps: Optional[int] = None  # the steps one call of the scenario runs, when it declared them (differential(steps=))
    growth: dict = field(default_factory=dict)  # side -> (bytes kept per call, the busiest rank's retained readings) (#37 item 3)
    outside: dict = field(default_factory=dict)  # side -> OutsideFigures of its memory run, read from the ranks' /proc (#38)
    wire: dict = field(default_factory=dict)  # side -> loopback bytes of its uncounted run (#38: the record), in a private namespace
    retransmitted: dict = field(default_factory=dict)  # side -> TCP segments the kernel retransmitted in that run
    functions: tuple = ()  # the functions differential(functions=) timed on their own (#37 item 2)
    function_times: dict = field(default_factory=dict)  # side -> {function: [seconds inside it per repetition, slowest rank]}

    def check_traffic(self, id, per=None, steps=None, requirements=None, location=None):
        """Exact: the head moves the same bytes in the same collectives as the base (per rank, the busiest),
        and issues the same collectives the counter could not see (another thread: `_diff_traffic`).
        Figures are per step where steps are declared (`steps`, else `differential(steps=)`), per call of the
        scenario otherwise or with `per="call"`; a failure names the head's call sites that differ (`_diff_traffic`)."""
        steps = steps or self.steps or 1
        return _diff_traffic.check_traffic(self.counts, id, per, steps, requirements, location, wire=self.wire, retransmitted=self.retransmitted)

    def check_memory(self, id, tolerance_bytes=1 << 20, tolerance_ratio=0.05, requirements=None, location=None):
        """The head's peak may exceed the base's by at most max(tolerance_bytes, tolerance_ratio × base), in the
        ranks' meter and, for what that meter missed, in the memory of record read from outside (_diff_memory)."""
        return _diff_memory.check_memory(self.peaks, self.outside, id, tolerance_bytes, tolerance_ratio, requirements, location,
                                         growth=self.growth, steps=self.steps)

    def check_time(self, id, margin=1.25, alpha=0.05, requirements=None, location=None):
        """Fails only when the head's median is over `margin` × the base's AND a rank test says the head is slower;
        or when the head's counted run alone was past the time cap (its timed rounds were then not run); an `error`
        where the repetitions are too few for the rank test ever to say "slower" (`_diff_time`)."""
        return _diff_time.check_time(self, id, margin, alpha, requirements, location)

    def check_function_times(self, id, margin=1.3, alpha=0.05, requirements=None, location=None, min_extra_s=5e-3):
        """One time check per function of differential(functions=): `<id>.<qualname>`, the head's median time inside
        it against the base's, with the margin, an extra of at least `min_extra_s` and the rank test (`_diff_functions`)."""
        return _diff_functions.check_function_times(self, id, margin, alpha, requirements, location, min_extra_s)

    def check_outputs(self, id, atol=0.0, rtol=0.0, requirements=None, location=None):
        """Outputs of every rank, bitwise (atol = rtol = 0) or within the stated tolerance."""
        import torch

        for rank, (b, h) in enumerate(zip(self.counts["base"], self.counts["head"])):
            problem = _diff_outputs.differ(b["outputs"], h["outputs"], atol, rtol, torch)
            if problem:
                return emit(id, "functional", "failed", f"rank {rank}: head's outputs differ from base's: {problem}", location, {"atol": atol, "rtol": rtol}, requirements)
        how = "bitwise" if atol == rtol == 0 else f"within atol={atol}, rtol={rtol}"
        return emit(id, "functional", "passed", f"head's outputs equal base's {how} on all {self.world_size} ranks", location, {"atol": atol, "rtol": rtol}, requirements)


def _time_cap(base_times, reps, time_cap):
    """Seconds a side's timed round may run before it stops starting repetitions: `time_cap` × what the
    base took for as many (its median repetition), at least 5 s. None until the base has been timed."""
    if not base_times or time_cap is None:
        return None
    return max(5.0, time_cap * statistics.median(base_times) * reps)


def differential(scenario, world_size=None, repetitions=7, measure=("traffic", "outputs", "memory", "time"), args=(), timeout=300, base=None, head=None, time_cap=20.0,
                 preload=(), steps=None, functions=()) -> Sides:
    """Runs `scenario(rank, world_size, rep, *args)` on the base tree and the head tree.

    scenario must import the code under test inside the function (each side imports its own
    tree) and be module-level (it is sent to fresh rank processes by name: anything else is refused
    with TypeError). rep is 0 for the counted and memory runs and each round's warm-up, and 1…repetitions
    over the timed repetitions of both rounds (round 2 goes on where round 1 stopped), so the timed
    calls see distinct inputs. A time run needs repetitions >= 3 (ValueError below: 2 a side can never fail).

    time_cap: a head that has spent `time_cap` × the base's time for a round stops starting
    repetitions (each round still measures at least one, so the two rounds give the rank test
    two head repetitions: p ≈ 0.02 against 7 base ones when both are slower than every base one).
    A per-element loop that makes a step 100× slower then ends in minutes, not hours, and the
    check says how many repetitions it measured. None measures every repetition. A head whose counted
    run alone (one call of the scenario, start-up included) took past `time_cap` × the base's gets no
    timed rounds at all (`Sides.capped`), and check_time fails on that ratio: a per-element loop that
    makes one call take minutes cannot run the repetitions a rank test needs within a probe's limit.
    `preload`: packages of the task's environment the rank server imports once for both sides
    (run_ranks' `preload`, which says what that means for the guard); never either tree's code,
    which each side must import for itself.
    `functions`: `path/in/tree.py:qualname` of functions whose own time the time run measures too, each
    side in its own tree (`_diff_functions`; `changed_functions()` names the PR's): check_function_times.
    `steps`: how many training steps one call of the scenario runs; traffic is then said per step ("per
    step over 4 steps"), not per call, unless check_traffic asks for per="call". The verdict compares totals.
    """
    guard_child_import("differential()")
    _diff_scenario.require_module_level(scenario)
    if "time" in measure and repetitions < 3:
        raise ValueError(f"differential(repetitions={repetitions}) cannot decide a time check: with 2 timed "
                         "repetitions a side (one per round), the rank test's p is never below 0.12, so check_time could "
                         "never fail; ask for at least 3 (p can then reach 0.040), or leave \"time\" out of measure")
    n = world_size or default_world_size()
    trees = {"base": base or base_tree(), "head": head or _head_tree()}
    other = {"base": trees["head"], "head": trees["base"]}
    sides = Sides(world_size=n, wall={s: 0.0 for s in SIDES}, steps=steps, functions=tuple(functions))
    count_wall = {}
    modes = (["count"] if {"traffic", "outputs"} & set(measure) else []) + [m for m in ("memory", "time") if m in measure]
    record_mode = "memory" if "memory" in modes else "count"  # the run without a counter, where there is one
    for mode in modes:
        if mode == "time" and sides.capped:
            break  # the head's counted run alone was past the cap: timed rounds would only cost the runner hours
        rounds = 1 if mode != "time" else 2
        got = {s: [] for s in SIDES}
        for r in range(rounds):  # ABBA: base first, then head first
            order = SIDES if r % 2 == 0 else SIDES[::-1]
            for side in order:
                t0 = time.perf_counter()
                reps = max(1, (repetitions + 1 - r) // 2) if mode == "time" else 0
                first = 1 + r * max(1, (repetitions + 1) // 2)  # round 2's reps follow round 1's: distinct over the run
                limit = _time_cap(_slowest(got["base"]), reps, time_cap) if mode == "time" and side == "head" else None
                window = Window(loopback, memory=mode == "memory") if mode == record_mode else None
                got[side].append(run_ranks(_side_worker, n, args=(trees[side], other[side], scenario, mode, reps, tuple(args), limit, first, tuple(functions)), timeout=timeout,
                                           preload=preload, _on=window))
                if window is not None:
                    wire = window.wire_bytes(payload_bytes)
                    if wire is not None:
                        sides.wire[side] = wire
                        sides.retransmitted[side] = window.retransmitted()
                    if window.memory is not None:
                        sides.outside[side] = window.memory
                sides.wall[side] += time.perf_counter() - t0
                if mode == "count":
                    count_wall[side] = time.perf_counter() - t0
        if mode == "count" and "time" in measure and time_cap is not None and count_wall["head"] > max(5.0, time_cap * count_wall["base"]):
            sides.capped["head"] = (count_wall["head"], count_wall["base"], time_cap)
        for side in SIDES:
            if mode == "count":
                sides.counts[side] = got[side][0]
            elif mode == "memory":
                sides.peaks[side] = max(r["peak"] for r in got[side][0])
                sides.growth[side] = _diff_memory.growth_per_call(got[side][0])
            else:
                sides.times[side] = _slowest(got[side])
                sides.function_times[side] = _diff_functions.slowest_per_function(got[side])
                asked = sum(ranks[0]["asked"] for ranks in got[side])
                if len(sides.times[side]) < asked:
                    sides.stopped[side] = (len(sides.times[side]), asked)
    return sides


def _slowest(rounds):
    """The time of record of each repetition: its slowest rank's (a rank stopped early ends the round)."""
    return [max(ts) for ranks in rounds for ts in zip(*(r["times"] for r in ranks))]
