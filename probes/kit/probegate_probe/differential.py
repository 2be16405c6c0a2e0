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

import math
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Optional

from . import _conf, _diff_memory, _diff_traffic
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


def _side_worker(rank, world, tree, other, scenario, mode, reps, args, limit=None):
    _use_tree(tree, other)
    if mode == "count":
        from .collectives import CollectiveCounter

        with CollectiveCounter() as counter:
            out = scenario(rank, world, 0, *args)
        return {"outputs": out, **_diff_traffic.traffic_figures(counter, tree)}
    if mode == "memory":
        from .memory import peak_memory

        _, peak = peak_memory(scenario, rank, world, 0, *args)
        return {"peak": peak}
    scenario(rank, world, 0, *args)  # warm-up: imports, caches, first-touch allocations
    times = []
    start = time.perf_counter()
    for rep in range(1, reps + 1):  # distinct inputs per repetition: a cache of the last answer does not help
        if limit is not None and times and _agree_to_stop(time.perf_counter() - start > limit):
            break  # the side is far past the base already: more repetitions only cost the runner time
        t0 = time.perf_counter()
        scenario(rank, world, rep, *args)
        times.append(time.perf_counter() - t0)
    return {"times": times, "asked": reps}


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
    outside: dict = field(default_factory=dict)  # side -> OutsideFigures of its memory run, read from the ranks' /proc (#38)
    wire: dict = field(default_factory=dict)  # side -> loopback bytes of its uncounted run (#38: the record), in a private namespace

    def check_traffic(self, id, per="call", steps=None, requirements=None, location=None):
        """Exact: the head moves the same bytes in the same collectives as the base (per rank, the busiest),
        and issues the same collectives the counter could not see (another thread: `_diff_traffic`).
        Figures are per `per`, divided by `steps` (else the scenario's declared `differential(steps=)`)."""
        steps = steps or self.steps or 1
        return _diff_traffic.check_traffic(self.counts, id, per, steps, requirements, location, wire=self.wire)

    def check_memory(self, id, tolerance_bytes=1 << 20, tolerance_ratio=0.05, requirements=None, location=None):
        """The head's peak may exceed the base's by at most max(tolerance_bytes, tolerance_ratio × base), in the
        ranks' meter and, for what that meter missed, in the memory of record read from outside (_diff_memory)."""
        return _diff_memory.check_memory(self.peaks, self.outside, id, tolerance_bytes, tolerance_ratio, requirements, location)

    def check_time(self, id, margin=1.25, alpha=0.05, requirements=None, location=None):
        """Fails only when the head's median is over `margin` × the base's AND a rank test says the head is slower;
        or when the head's counted run alone was past the time cap (its timed rounds were then not run)."""
        if "head" in self.capped:
            hw, bw, cap = self.capped["head"]
            measured = {"head_counted_run_s": hw, "base_counted_run_s": bw, "time_ratio": hw / bw if bw else float("inf"), "time_cap": cap, "margin": margin}
            return emit(id, "time", "failed", f"head's counted run took {hw / bw:.1f}× the wall time of base's ({hw:.1f} s against {bw:.1f} s, start-up included), past the time cap of {cap:g}×: its timed repetitions were not run", location, measured, requirements)
        b, h = self.times["base"], self.times["head"]
        ratio = statistics.median(h) / statistics.median(b)
        p = mann_whitney_greater(h, b)
        measured = {"base_median_s": statistics.median(b), "head_median_s": statistics.median(h), "time_ratio": ratio, "rank_test_p": p, "margin": margin, "repetitions": len(h)}
        stopped = self.stopped.get("head")
        reps = f"{len(h)} interleaved repetitions"
        if stopped:
            measured["head_repetitions_asked"] = stopped[1]
            reps = f"{len(h)} of {stopped[1]} interleaved repetitions: the head was stopped past its time cap"
        if ratio > margin and p < alpha:
            return emit(id, "time", "failed", f"head takes {ratio:.2f}× the time of base (median {statistics.median(h) * 1e3:.1f} ms against {statistics.median(b) * 1e3:.1f} ms over {reps}; rank test p={p:.3f}; margin {margin}×)", location, measured, requirements)
        return emit(id, "time", "passed", f"head takes {ratio:.2f}× the time of base (margin {margin}×, p={p:.3f})", location, measured, requirements)

    def check_outputs(self, id, atol=0.0, rtol=0.0, requirements=None, location=None):
        """Outputs of every rank, bitwise (atol = rtol = 0) or within the stated tolerance."""
        import torch

        for rank, (b, h) in enumerate(zip(self.counts["base"], self.counts["head"])):
            problem = _differ(b["outputs"], h["outputs"], atol, rtol, torch)
            if problem:
                return emit(id, "functional", "failed", f"rank {rank}: head's outputs differ from base's: {problem}", location, {"atol": atol, "rtol": rtol}, requirements)
        how = "bitwise" if atol == rtol == 0 else f"within atol={atol}, rtol={rtol}"
        return emit(id, "functional", "passed", f"head's outputs equal base's {how} on all {self.world_size} ranks", location, {"atol": atol, "rtol": rtol}, requirements)


def _differ(b, h, atol, rtol, torch, path="outputs"):
    if isinstance(b, torch.Tensor) or isinstance(h, torch.Tensor):
        if not (isinstance(b, torch.Tensor) and isinstance(h, torch.Tensor)):
            return f"{path}: {type(b).__name__} against {type(h).__name__}"
        if b.shape != h.shape or b.dtype != h.dtype:
            return f"{path}: shape/dtype {tuple(h.shape)}/{h.dtype}, base {tuple(b.shape)}/{b.dtype}"
        if atol == rtol == 0:
            same = torch.equal(b, h) or (b.is_floating_point() and torch.equal(torch.nan_to_num(b), torch.nan_to_num(h)) and torch.equal(b.isnan(), h.isnan()))
        else:
            same = torch.allclose(b.double(), h.double(), atol=atol, rtol=rtol, equal_nan=True)
        if not same:
            diff = (b.double() - h.double()).abs().nan_to_num(0).max().item() if b.numel() else 0
            return f"{path}: max |difference| {diff:.3g}"
        return None
    if isinstance(b, dict) and isinstance(h, dict):
        if set(b) != set(h):
            return f"{path}: keys {sorted(map(str, h))}, base {sorted(map(str, b))}"
        return next((p for k in b if (p := _differ(b[k], h[k], atol, rtol, torch, f"{path}[{k!r}]"))), None)
    if isinstance(b, (list, tuple)) and isinstance(h, (list, tuple)):
        if len(b) != len(h):
            return f"{path}: {len(h)} items, base {len(b)}"
        return next((p for i, (x, y) in enumerate(zip(b, h)) if (p := _differ(x, y, atol, rtol, torch, f"{path}[{i}]"))), None)
    return None if b == h else f"{path}: {h!r}, base {b!r}"


def mann_whitney_greater(xs, ys) -> float:
    """One-sided p that xs tends to exceed ys (normal approximation with ties, continuity corrected)."""
    n, m = len(xs), len(ys)
    if n == 0 or m == 0:
        return 1.0
    u = sum((x > y) + 0.5 * (x == y) for x in xs for y in ys)
    mu = n * m / 2
    sigma = math.sqrt(n * m * (n + m + 1) / 12)
    if sigma == 0:
        return 1.0
    z = (u - mu - 0.5) / sigma
    return 0.5 * math.erfc(z / math.sqrt(2))


def _time_cap(base_times, reps, time_cap):
    """Seconds a side's timed round may run before it stops starting repetitions: `time_cap` × what the
    base took for as many (its median repetition), at least 5 s. None until the base has been timed."""
    if not base_times or time_cap is None:
        return None
    return max(5.0, time_cap * statistics.median(base_times) * reps)


def differential(scenario, world_size=None, repetitions=7, measure=("traffic", "outputs", "memory", "time"), args=(), timeout=300, base=None, head=None, time_cap=20.0,
                 preload=(), steps=None) -> Sides:
    """Runs `scenario(rank, world_size, rep, *args)` on the base tree and the head tree.

    scenario must import the code under test inside the function (each side imports its own
    tree) and be module-level (it is sent to fresh rank processes). rep is 0 for the counted and
    memory runs and 1…repetitions for the timed ones, so a timed loop sees distinct inputs.

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
    `steps`: how many training steps one call of the scenario runs; traffic is then judged and said
    per step ("per step over 4 steps"), not per call.
    """
    guard_child_import("differential()")
    n = world_size or default_world_size()
    trees = {"base": base or base_tree(), "head": head or _head_tree()}
    other = {"base": trees["head"], "head": trees["base"]}
    sides = Sides(world_size=n, wall={s: 0.0 for s in SIDES}, steps=steps)
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
                limit = _time_cap(_slowest(got["base"]), reps, time_cap) if mode == "time" and side == "head" else None
                window = Window(loopback, memory=mode == "memory") if mode == record_mode else None
                got[side].append(run_ranks(_side_worker, n, args=(trees[side], other[side], scenario, mode, reps, tuple(args), limit), timeout=timeout,
                                           preload=preload, _on=window))
                if window is not None:
                    if window.wire_bytes(payload_bytes) is not None:
                        sides.wire[side] = window.wire_bytes(payload_bytes)
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
            else:
                sides.times[side] = _slowest(got[side])
                asked = sum(ranks[0]["asked"] for ranks in got[side])
                if len(sides.times[side]) < asked:
                    sides.stopped[side] = (len(sides.times[side]), asked)
    return sides


def _slowest(rounds):
    """The time of record of each repetition: its slowest rank's (a rank stopped early ends the round)."""
    return [max(ts) for ranks in rounds for ts in zip(*(r["times"] for r in ranks))]
