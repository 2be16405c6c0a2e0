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


def _mib(b) -> str:
    return f"{b / 2**20:.1f} MiB"


def check_memory(peaks, outside, id, tolerance_bytes, tolerance_ratio, requirements=None, location=None):
    b, h = peaks["base"], peaks["head"]
    allowed = max(tolerance_bytes, tolerance_ratio * b)
    measured = {"base_peak_bytes": b, "head_peak_bytes": h, "allowed_extra_bytes": int(allowed)}
    ob, oh = outside.get("base"), outside.get("head")
    if ob is not None and oh is not None:
        measured.update(ob.measured("base_outside_"), **oh.measured("head_outside_"))
    if h - b > allowed:
        return emit(id, "memory", "failed", f"head holds {_mib(h - b)} more than base at its peak ({_mib(h)} against {_mib(b)}; allowed {_mib(allowed)})", location, measured, requirements)
    if ob is not None and oh is not None:
        allowed_out = max(tolerance_bytes, tolerance_ratio * ob.peak_bytes)
        unseen_b, unseen_h = max(0, ob.peak_bytes - b), max(0, oh.peak_bytes - h)
        measured["allowed_outside_extra_bytes"] = int(allowed_out)
        if oh.peak_bytes - ob.peak_bytes > allowed_out and unseen_h - unseen_b > allowed_out:
            where = f"; shared memory {_mib(oh.shmem_bytes)}, memory file systems {_mib(oh.tmpfs_bytes)}" if oh.shmem_bytes or oh.tmpfs_bytes else ""
            return emit(id, "memory", "failed",
                        f"memory of record: head's busiest rank held {_mib(oh.peak_bytes)} over the run, base's {_mib(ob.peak_bytes)} "
                        f"(allowed {_mib(allowed_out)} more), read by the probe's process from the ranks' /proc{where}; the meter "
                        f"inside the ranks saw {_mib(h)} against {_mib(b)}: the head keeps {_mib(unseen_h - unseen_b)} more where "
                        "an in-process meter does not see it", location, measured, requirements)
    return emit(id, "memory", "passed", f"head peaks at {_mib(h)}, base {_mib(b)}", location, measured, requirements)
