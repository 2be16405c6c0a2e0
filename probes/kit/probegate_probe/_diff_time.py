"""Head against base, time (differential.py's `check_time`): the ratio of the medians against a margin,
with a one-sided rank test, and an explicit `error` where the repetitions are too few for the test to
ever say "slower" (2 against 2: p ≥ 0.12), never a silent pass."""
from __future__ import annotations

import math
import statistics

from .emit import emit


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


def smallest_p(n: int, m: int) -> float:
    """The rank test's p when every one of n head repetitions is slower than every one of m base ones."""
    return mann_whitney_greater([1.0] * n, [0.0] * m)


def repetitions_needed(alpha: float) -> int:
    """The fewest `differential(repetitions=)` whose timed runs (that many a side) can reach p < alpha."""
    r = 3
    while smallest_p(r, r) >= alpha and r < 1000:
        r += 1
    return r


def check_time(sides, id, margin=1.25, alpha=0.05, requirements=None, location=None):
    if "head" in sides.capped:
        hw, bw, cap = sides.capped["head"]
        measured = {"head_counted_run_s": hw, "base_counted_run_s": bw, "time_ratio": hw / bw if bw else float("inf"), "time_cap": cap, "margin": margin}
        return emit(id, "time", "failed", f"head's counted run took {hw / bw:.1f}× the wall time of base's ({hw:.1f} s against {bw:.1f} s, start-up included), past the time cap of {cap:g}×: its timed repetitions were not run", location, measured, requirements)
    b, h = sides.times["base"], sides.times["head"]
    ratio = statistics.median(h) / statistics.median(b)
    p = mann_whitney_greater(h, b)
    measured = {"base_median_s": statistics.median(b), "head_median_s": statistics.median(h), "time_ratio": ratio, "rank_test_p": p, "margin": margin, "repetitions": len(h)}
    stopped = sides.stopped.get("head")
    reps = f"{len(h)} interleaved repetitions"
    if stopped:
        measured["head_repetitions_asked"] = stopped[1]
        reps = f"{len(h)} of {stopped[1]} interleaved repetitions: the head was stopped past its time cap"
    floor = smallest_p(len(h), len(b))
    if floor >= alpha:
        measured["smallest_p"] = floor
        return emit(id, "time", "error", f"cannot decide: {len(h)} head and {len(b)} base repetitions are too few for the rank test (its p is at "
                    f"least {floor:.3f} even when every head repetition is slower than every base one, and α = {alpha:g}), so no head could "
                    f"fail; head takes {ratio:.2f}× the time of base (margin {margin}×): measure at least {repetitions_needed(alpha)} "
                    "repetitions a side (differential(repetitions=))", location, measured, requirements)
    if ratio > margin and p < alpha:
        return emit(id, "time", "failed", f"head takes {ratio:.2f}× the time of base (median {statistics.median(h) * 1e3:.1f} ms against {statistics.median(b) * 1e3:.1f} ms over {reps}; rank test p={p:.3f}; margin {margin}×)", location, measured, requirements)
    return emit(id, "time", "passed", f"head takes {ratio:.2f}× the time of base (margin {margin}×, p={p:.3f})", location, measured, requirements)
