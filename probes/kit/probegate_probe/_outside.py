"""Memory of record (#38 item 2): the ranks' memory read by the probe's own process, from /proc.

A rank runs the submission, so whatever it reads about itself it can game: it can reset its own
high-water mark (`/proc/self/clear_refs`), keep its scratch where its meter does not look, or
patch the meter. The figures here are the kernel's, read from outside the rank:

- at the window's start (every rank joined the group) the parent resets each rank's high-water
  mark through `/proc/<pid>/clear_refs` and notes its resident set;
- while the window is open a thread of the parent samples each rank's `/proc/<pid>/status`
  (VmHWM, VmRSS, RssAnon, RssShmem) every `interval` seconds; VmHWM is the kernel's peak of the
  resident set since the reset, anonymous memory, shared memory (`share_memory_()`, /dev/shm
  mappings, memfd) and mapped files alike, so a peak between two samples is still seen;
- a rank that resets its own mark shows as a high-water mark lower than the last one sampled: the
  reset is counted (`resets`), and the highest mark seen before it stays the figure;
- files kept in memory file systems without being mapped (/dev/shm, a tmpfs /tmp) belong to no
  process's resident set: their growth over the window, from statvfs, is added;
- memory kept in a process a rank started (a helper holding every step's tensors, a forked cache
  server) is in no rank's resident set: every DESCENDANT_EVERY samples the parent finds each rank's
  descendants (/proc/<pid>/task/*/children) and reads their private memory (Private_Clean +
  Private_Dirty of /proc/<pid>/smaps_rollup: a forked child's pages shared with its parent are the
  parent's until written). The largest sum a rank's descendants reached is added to that rank's.

The figure of record is the busiest rank's peak above its resident set at the window's start (with
its descendants'), plus that tmpfs growth. Where the parent may not write clear_refs (another user's process), the
peak comes from the sampled VmRSS only, a lower bound, and `exact` is False.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .memory import tmpfs_used_bytes

_FIELDS = ("VmHWM", "VmRSS", "RssAnon", "RssShmem")
# The kernel folds each thread's resident-page count into the process's lazily (up to 64 pages per
# thread), so a high-water mark read twice can dip by a few hundred KiB with no reset: a dip counts as
# a reset only past this (a peak hidden under it is under every memory check's floor too).
RESET_SLACK = 2 << 20
# Descendants are looked for and read every this many samples (smaps_rollup walks the page tables: ~1 ms
# for a few hundred MiB), so every 20 ms at the default interval; a helper that holds memory for less is missed.
DESCENDANT_EVERY = 10


def _children(pid: int) -> List[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out += [int(c) for c in fh.read().split()]
    except (OSError, ValueError):
        pass
    return out


def descendants(pid: int) -> List[int]:
    """Every process below `pid` now (children, theirs, …)."""
    found, todo = [], _children(pid)
    while todo:
        c = todo.pop()
        if c not in found:
            found.append(c)
            todo += _children(c)
    return found


def private_bytes(pid: int) -> Optional[int]:
    """Pages only this process maps (Private_Clean + Private_Dirty), or None once it has exited."""
    total = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    total += int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return total


def _status(pid: int) -> Optional[Dict[str, int]]:
    """The rank's memory fields in bytes, or None once it has exited (a zombie has no Vm fields)."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                key = line.split(":", 1)[0]
                if key in _FIELDS:
                    out[key] = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return out if "VmRSS" in out else None


def _reset_mark(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


@dataclass
class OutsideFigures:
    """What the parent read of one run's ranks (bytes)."""

    peak_bytes: int  # the figure of record: the busiest rank's peak above its start, plus tmpfs growth
    per_rank: List[int] = field(default_factory=list)
    shmem_bytes: int = 0  # the largest shared-memory resident set a rank reached above its start
    tmpfs_bytes: int = 0
    resets: int = 0  # high-water marks that went down while the window was open: a rank reset its own
    samples: int = 0
    exact: bool = True
    descendants_bytes: int = 0  # the largest private memory a rank's descendants held together
    descendants: int = 0  # processes the ranks started that were seen in the window

    def measured(self, prefix: str = "outside_") -> dict:
        return {f"{prefix}peak_bytes": self.peak_bytes, f"{prefix}shmem_bytes": self.shmem_bytes,
                f"{prefix}tmpfs_bytes": self.tmpfs_bytes, f"{prefix}resets": self.resets,
                f"{prefix}samples": self.samples, f"{prefix}exact": self.exact,
                f"{prefix}descendants_bytes": self.descendants_bytes, f"{prefix}descendants": self.descendants}


class OutsideMeter:
    """start(pids) at the window's start, stop() at its end -> OutsideFigures. Runs in the probe's
    process, never in a rank."""

    def __init__(self, interval: float = 0.002):
        self.interval = interval
        self._thread: Optional[threading.Thread] = None
        self._halt = threading.Event()

    def start(self, pids: List[int]) -> None:
        self.pids = list(pids)
        self.exact = all([_reset_mark(pid) for pid in self.pids])
        first = {pid: _status(pid) or {} for pid in self.pids}
        self.start_rss = {pid: s.get("VmRSS", 0) for pid, s in first.items()}
        self.start_shmem = {pid: s.get("RssShmem", 0) for pid, s in first.items()}
        self.high = dict(self.start_rss)  # the highest resident set seen (VmHWM, else VmRSS)
        self.last_mark = {pid: s.get("VmHWM", 0) for pid, s in first.items()}
        self.shmem = dict(self.start_shmem)
        self.resets = self.samples = self._ticks = 0
        # processes the ranks had already started (the kit's and torch's own helpers) are their base line
        self._before = {pid: {c: private_bytes(c) or 0 for c in descendants(pid)} for pid in self.pids}
        self.kids = {pid: 0 for pid in self.pids}  # the largest private memory of each rank's descendants
        self._seen = set()
        self.tmpfs_start = tmpfs_used_bytes()
        self._halt.clear()
        self._thread = threading.Thread(target=self._run, name="Thread-outside", daemon=True)
        self._thread.start()

    def _sample_descendants(self) -> None:
        for pid in self.pids:
            total = 0
            for c in descendants(pid):
                self._seen.add(c)
                total += max(0, (private_bytes(c) or 0) - self._before[pid].get(c, 0))
            self.kids[pid] = max(self.kids[pid], total)

    def _sample(self) -> None:
        if self._ticks % DESCENDANT_EVERY == 0:
            self._sample_descendants()
        self._ticks += 1
        for pid in self.pids:
            s = _status(pid)
            if s is None:
                continue
            self.samples += 1
            mark = s.get("VmHWM", 0) if self.exact else 0
            if mark + RESET_SLACK < self.last_mark[pid]:
                self.resets += 1  # the mark went down: only a write to the rank's own clear_refs does that
            self.last_mark[pid] = mark
            self.high[pid] = max(self.high[pid], mark, s["VmRSS"])
            self.shmem[pid] = max(self.shmem[pid], s.get("RssShmem", 0))

    def _run(self) -> None:
        while not self._halt.is_set():
            self._sample()
            self._halt.wait(self.interval)

    def sample_now(self) -> None:
        """One more reading before the ranks may exit (the end of the window)."""
        self._sample_descendants()
        self._sample()

    def stop(self) -> OutsideFigures:
        if self._thread is not None:
            self._halt.set()
            self._thread.join(5)
            self._thread = None
        self._sample()
        per_rank = [max(0, self.high[p] - self.start_rss[p]) + self.kids[p] for p in self.pids]
        tmpfs = max(0, tmpfs_used_bytes() - self.tmpfs_start)
        shmem = max([max(0, self.shmem[p] - self.start_shmem[p]) for p in self.pids] or [0])
        return OutsideFigures(peak_bytes=max(per_rank or [0]) + tmpfs, per_rank=per_rank, shmem_bytes=shmem,
                              tmpfs_bytes=tmpfs, resets=self.resets, samples=self.samples, exact=self.exact,
                              descendants_bytes=max(self.kids.values(), default=0), descendants=len(self._seen - {c for b in self._before.values() for c in b}))


class Window:
    """The `_on` hook of run_ranks for a record run: loopback counters (record.loopback) and the
    outside memory meter, from "ready" (every rank joined) to "done" (every value came and every
    rank exited)."""

    def __init__(self, loopback, memory: bool = True):
        self._loopback = loopback
        self.marks: Dict[str, Optional[dict]] = {}
        self.meter = OutsideMeter() if memory else None
        self.memory: Optional[OutsideFigures] = None

    def __call__(self, event: str, pids: List[int]) -> None:
        if event in ("ready", "done"):
            self.marks[event] = self._loopback()
        if event == "ready" and self.meter is not None:
            self.meter.start(pids)
        elif event == "values" and self.meter is not None:
            self.meter.sample_now()
        if event == "done" and self.meter is not None:
            self.memory = self.meter.stop()

    def wire_bytes(self, payload_bytes) -> Optional[int]:
        """The window's loopback data bytes in a private namespace, else None."""
        m = self.marks
        if {"ready", "done"} <= set(m) and all(v and v["private"] for v in m.values()):
            return payload_bytes(m["ready"], m["done"])
        return None

    def retransmitted(self) -> int:
        """TCP segments the kernel retransmitted in the window (record.loopback's `retrans`), 0 unread."""
        m = self.marks
        if {"ready", "done"} <= set(m) and all(m.values()):
            return max(0, m["done"].get("retrans", 0) - m["ready"].get("retrans", 0))
        return 0


__all__ = ["OutsideMeter", "OutsideFigures", "Window"]
