"""check_memory of `differential()` (#38 item 2): the ranks' own peaks, and memory of record beside them.

The rank's meter (`peak_memory`, in the rank) gives the figure per call; the probe's process reads the
same ranks from outside over the same run (_outside.py: the kernel's high-water mark, shared memory,
memory file systems) — a figure the head's code cannot lower. Both sides' outside figures include what
the rank's meter cannot see for either side (the tree's import, the worker's own set-up), so the check
of record compares what each side's meter *missed*: the head may not hide more than the base beyond
the same allowance. A head that keeps scratch in /dev/shm files, or resets its own high-water mark to
hide a peak from its in-process meter, fails here though the meter in the rank agrees with the base.
"""
from __future__ import annotations

from .emit import emit

GROWTH_CALLS = 3  # calls after the peak's, each followed by a reading of what the rank retains
GROWTH_FLOOR = 2 << 20  # bytes per call: what allocator fragmentation leaves run to run
GROWTH_SHARE = 0.02  # of the base's peak, per call


def _retained_bytes() -> int:
    """Anonymous and shared memory resident in this rank now, after a collection."""
    import gc

    from .memory import _fresh_pages_for_large_blocks, _status_kib

    gc.collect()
    _fresh_pages_for_large_blocks()  # malloc_trim: freed heap goes back, so what is left is held
    total = 0
    for name in ("RssAnon", "RssShmem"):
        try:
            total += _status_kib(name) * 1024
        except KeyError:
            return _status_kib("VmRSS") * 1024
    return total


def retained_after_calls(scenario, rank, world, args, calls=GROWTH_CALLS):
    """In a rank, after the measured call: what it retains then and after each of `calls` more calls
    (reps 1…calls). Memory that grows call after call (a cache, a list of every step's tensors) shows
    as a slope however small a step is; one peak over a few steps hides it under its allowance."""
    readings = [_retained_bytes()]
    for rep in range(1, calls + 1):
        scenario(rank, world, rep, *args)
        readings.append(_retained_bytes())
    return readings


def growth_per_call(ranks):
    """(bytes kept per call, readings) of the rank whose memory grew most over the calls."""
    slopes = [((r["retained"][-1] - r["retained"][0]) / (len(r["retained"]) - 1), r["retained"])
              for r in ranks if len(r.get("retained") or []) >= 2]
    return max(slopes, key=lambda s: s[0], default=(0.0, []))


def _check_growth(growth, peaks, steps):
    """None, or the failure message: the head keeps more per call than the base beyond the allowance."""
    if not growth.get("base") or not growth.get("head") or not growth["base"][1] or not growth["head"][1]:
        return None, {}
    gb, gh = growth["base"][0], growth["head"][0]
    allowed = max(GROWTH_FLOOR, GROWTH_SHARE * peaks["base"])
    measured = {"base_growth_bytes_per_call": int(gb), "head_growth_bytes_per_call": int(gh), "allowed_growth_bytes_per_call": int(allowed)}
    if gh - gb <= allowed:
        return None, measured
    per_step = f" ({_mib((gh - gb) / steps)} per step over {steps} steps a call)" if steps and steps > 1 else ""
    readings = ", ".join(_mib(v - growth["head"][1][0]) for v in growth["head"][1][1:])
    return (f"head keeps {_mib(gh - gb)} more per call than base{per_step}: its busiest rank retained +{readings} after "
            f"each of {len(growth['head'][1]) - 1} more calls, base {_mib(gb)} per call (allowed {_mib(allowed)} per call): "
            "memory that grows with every call — a cache or a list that is never released"), measured


def _mib(b) -> str:
    return f"{b / 2**20:.1f} MiB"


def check_memory(peaks, outside, id, tolerance_bytes, tolerance_ratio, requirements=None, location=None, growth=None, steps=None):
    b, h = peaks["base"], peaks["head"]
    allowed = max(tolerance_bytes, tolerance_ratio * b)
    measured = {"base_peak_bytes": b, "head_peak_bytes": h, "allowed_extra_bytes": int(allowed)}
    ob, oh = outside.get("base"), outside.get("head")
    if ob is not None and oh is not None:
        measured.update(ob.measured("base_outside_"), **oh.measured("head_outside_"))
    grew, grow_measured = _check_growth(growth or {}, peaks, steps)
    measured.update(grow_measured)
    if h - b > allowed:
        return emit(id, "memory", "failed", f"head holds {_mib(h - b)} more than base at its peak ({_mib(h)} against {_mib(b)}; allowed {_mib(allowed)})", location, measured, requirements)
    if grew is not None:
        return emit(id, "memory", "failed", grew, location, measured, requirements)
    if ob is not None and oh is not None:
        allowed_out = max(tolerance_bytes, tolerance_ratio * ob.peak_bytes)
        # What each side's meter saw over the run: its peak call, and what its ranks kept over the calls after it.
        seen = {s: peaks[s] + max(0, (growth or {}).get(s, (0, []))[0] * GROWTH_CALLS) for s in ("base", "head")}
        unseen_b, unseen_h = max(0, ob.peak_bytes - seen["base"]), max(0, oh.peak_bytes - seen["head"])
        measured["allowed_outside_extra_bytes"] = int(allowed_out)
        if oh.peak_bytes - ob.peak_bytes > allowed_out and unseen_h - unseen_b > allowed_out:
            where = f"; shared memory {_mib(oh.shmem_bytes)}, memory file systems {_mib(oh.tmpfs_bytes)}" if oh.shmem_bytes or oh.tmpfs_bytes else ""
            if oh.descendants_bytes:
                where += f"; {_mib(oh.descendants_bytes)} in {oh.descendants} process(es) its ranks started"
            return emit(id, "memory", "failed",
                        f"memory of record: head's busiest rank held {_mib(oh.peak_bytes)} over the run, base's {_mib(ob.peak_bytes)} "
                        f"(allowed {_mib(allowed_out)} more), read by the probe's process from the ranks' /proc{where}; the meter "
                        f"inside the ranks saw {_mib(h)} against {_mib(b)}: the head keeps {_mib(unseen_h - unseen_b)} more where "
                        "an in-process meter does not see it", location, measured, requirements)
    return emit(id, "memory", "passed", f"head peaks at {_mib(h)}, base {_mib(b)}", location, measured, requirements)
