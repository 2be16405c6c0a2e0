"""Traffic and memory of record (#38 items 1–2): every byte between the ranks, counted by the kernel,
and the ranks' memory, read from their /proc (_outside.py) — both by the probe's own process, never by
the ranks that run the submission.

Each sandboxed job has a network namespace of its own with only the loopback interface, so the
interface's counters hold every byte the job's processes sent one another over TCP: gloo's pairs,
the c10d TCPStore (object collectives, `store.set`), raw sockets, whatever the submission opens.
The counters are the kernel's; no process of the job can lower them. `traffic_of_record` runs the
candidate and a reference on fresh ranks of the same shape, with no counter, tracer or dispatch mode
in the ranks and no kit collective between their steps (nothing in the ranks says they are measured,
#38 item 3), at a training loop's cadence (drawn pauses between steps), and compares the two totals:
the candidate may move no more than the reference beyond the noise of the transport (TCP
acknowledgements, a few hundred bytes per step). What is left is traffic no collective counter saw:
a side channel, named as such with both figures.

Not covered here: shared-memory transports (NCCL's SHM/P2P over NVLink) — GPU runners read NVLink
counters through NVML beside this (bench/gpu_memory_of_record.py).
"""
from __future__ import annotations

import random
import socket
import time
from dataclasses import dataclass, field
from typing import Optional

from . import ranks as _ranks
from ._outside import OutsideFigures, Window
from .ranks import run_ranks

NOISE_FLOOR = 16 * 1024  # bytes: measured spread run to run is under 300 (bench/RESULTS.md), set-up included
NOISE_SHARE = 0.01  # of the reference's total


def loopback() -> Optional[dict]:
    """This network namespace's loopback counters ({'bytes', 'packets'} sent), or None when unreadable."""
    try:
        with open("/proc/net/dev") as fh:
            rows = fh.read().splitlines()[2:]
    except OSError:
        return None
    names, lo = [], None
    for row in rows:
        name, _, data = row.partition(":")
        names.append(name.strip())
        if name.strip() == "lo":
            cols = data.split()
            lo = {"bytes": int(cols[8]), "packets": int(cols[9])}
    if lo is not None:
        lo["private"] = names == ["lo"]  # a namespace of the job's own holds nothing else
        lo["retrans"] = _retransmitted_segments()
    return lo


def _retransmitted_segments() -> int:
    """This namespace's TCP RetransSegs (/proc/net/snmp), 0 when unreadable. On a loaded runner the
    loopback retransmits a segment now and then: its data is carried twice, and counted twice."""
    try:
        with open("/proc/net/snmp") as fh:
            tcp = [line.split() for line in fh if line.startswith("Tcp:")]
        return int(tcp[1][tcp[0].index("RetransSegs")])
    except (OSError, ValueError, IndexError):
        return 0


# Data a retransmitted loopback segment may carry again: lo's MTU (65,536) less the headers.
RETRANS_SEGMENT_BYTES = 65536 - 52


HEADER_BYTES = 52  # IPv4 (20) + TCP with timestamps (32): what every loopback packet carries besides its data


def payload_bytes(before: dict, after: dict) -> int:
    """Data bytes the loopback carried between two readings: its bytes less each packet's headers. A
    polling loop (torch 1.13's store barrier: ~770 packets of a few bytes while a rank starts) or the
    acknowledgements of a slower run add packets, hardly data; a side channel adds data."""
    return max(0, (after["bytes"] - before["bytes"]) - HEADER_BYTES * (after["packets"] - before["packets"]))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _steps(rank, world, fn, args, pauses):
    """In a rank: fn once per step, after the step's pause; the last step's value comes back."""
    out = None
    for pause in pauses:
        time.sleep(pause)
        out = fn(rank, world, *args)
    return out


@dataclass
class TrafficRecord:
    """Both sides' loopback data (bytes the kernel carried between the ranks, headers left out) and the verdict."""

    candidate_bytes: int
    reference_bytes: int
    tolerance_bytes: int
    steps: int
    private: bool
    candidate_values: list = field(default_factory=list, repr=False)
    reference_values: list = field(default_factory=list, repr=False)
    packets: dict = field(default_factory=dict)
    memory: dict = field(default_factory=dict, repr=False)  # side -> OutsideFigures of the same runs
    retransmitted: dict = field(default_factory=dict)  # side -> TCP segments retransmitted in its window

    @property
    def extra_bytes(self) -> int:
        return self.candidate_bytes - self.reference_bytes

    @property
    def passed(self) -> bool:
        return self.extra_bytes <= self.tolerance_bytes

    def measured(self, prefix="record_") -> dict:
        return {f"{prefix}candidate_bytes": self.candidate_bytes, f"{prefix}reference_bytes": self.reference_bytes,
                f"{prefix}extra_bytes": self.extra_bytes, f"{prefix}tolerance_bytes": self.tolerance_bytes,
                f"{prefix}steps": self.steps, f"{prefix}private_namespace": self.private,
                **{f"{prefix}{side}_retransmitted_segments": n for side, n in self.retransmitted.items()}}

    def message(self, what: str = "the candidate") -> str:
        per = self.extra_bytes / max(1, self.steps)
        return (f"a side channel: {what} moved {self.candidate_bytes:,} bytes between the ranks over {self.steps} steps, "
                f"the reference {self.reference_bytes:,} — {self.extra_bytes:,} more ({per:,.0f} per step; allowed "
                f"{self.tolerance_bytes:,} of transport noise), counted by the kernel on the job's loopback, which "
                "carries every byte between ranks: traffic the collective counter did not see (the store, a socket, "
                "or collectives issued where the counter does not look)")


def _job(fn, n, args, pauses, backend, timeout, preload):
    """One side's run: bytes and packets from the moment every rank joined the group to the moment
    the last rank exited (the group's set-up is outside the window: torch 1.13's store barrier polls
    every 10 ms for as long as the slowest rank takes to start), and its memory read from outside
    the ranks over the same window (_outside.py)."""
    if loopback() is None:
        raise RuntimeError("traffic of record: /proc/net/dev is not readable in this process")
    window = Window(loopback)
    init = f"tcp://127.0.0.1:{_free_port()}"  # the store on loopback too, whatever the engine gave
    values = run_ranks(_steps, world_size=n, args=(fn, tuple(args), list(pauses)), backend=backend,
                       timeout=timeout, preload=preload, _init_method=init, _on=window)
    before, after = window.marks["ready"], window.marks["done"]
    return _Side(payload_bytes(before, after), after["packets"] - before["packets"], values, before["private"], window.memory,
                 after.get("retrans", 0) - before.get("retrans", 0))


@dataclass
class _Side:
    bytes: int
    packets: int
    values: list
    private: bool
    memory: Optional[OutsideFigures]
    retrans: int = 0  # TCP segments the kernel retransmitted in the window


def _pair(candidate, reference, world_size, args, steps, pause, backend, timeout, preload, seed):
    """Reference first, then the candidate, on fresh ranks of the same shape and the same drawn pauses."""
    if steps < 1:
        raise ValueError("steps must be >= 1")
    n = world_size if world_size is not None else _ranks.world_size()
    draw = random.Random(seed if seed is not None else 0x5EED)
    pauses = [draw.uniform(*pause) for _ in range(steps)]
    ref = _job(reference, n, args, pauses, backend, timeout, preload)
    return ref, _job(candidate, n, args, pauses, backend, timeout, preload)


def traffic_of_record(candidate, reference, world_size: Optional[int] = None, args=(), steps: int = 3,
                      pause=(0.02, 0.12), backend: Optional[str] = None, timeout: float = 180, preload=(),
                      tolerance_bytes: Optional[int] = None, seed: Optional[int] = None) -> TrafficRecord:
    """candidate(rank, world, *args) and reference(...) — one training step each, module-level
    functions as for run_ranks — each run for `steps` steps on fresh ranks, reference first; returns
    the TrafficRecord (`passed`, `message()`, `measured()`; each side's last values per rank; `memory`:
    each side's memory read from outside its ranks over the same runs, as memory_of_record judges it).

    Both sides see the same drawn pauses (seconds, uniform in `pause`, from `seed`). The tolerance is
    NOISE_FLOOR plus NOISE_SHARE of the reference's bytes unless given. Outside a namespace of the
    job's own (the kit run by hand on a host), other processes' loopback traffic counts too:
    `private` is then False and the record says so in `measured()`.
    """
    ref, cand = _pair(candidate, reference, world_size, args, steps, pause, backend, timeout, preload, seed)
    tol = tolerance_bytes if tolerance_bytes is not None else int(NOISE_FLOOR + NOISE_SHARE * ref.bytes)
    # A segment the kernel retransmitted for the candidate beyond the reference's carried its data twice (a
    # CI run: +32,780 B on a correct submission, allowed 32,147): each such segment, counted by the kernel
    # and not by the ranks, excuses at most one segment's data.
    tol += RETRANS_SEGMENT_BYTES * max(0, cand.retrans - ref.retrans)
    return TrafficRecord(candidate_bytes=cand.bytes, reference_bytes=ref.bytes, tolerance_bytes=tol, steps=steps,
                         private=ref.private and cand.private, candidate_values=cand.values, reference_values=ref.values,
                         packets={"candidate": cand.packets, "reference": ref.packets},
                         memory={"candidate": cand.memory, "reference": ref.memory},
                         retransmitted={"candidate": cand.retrans, "reference": ref.retrans})


MEMORY_FLOOR = 4 << 20  # bytes: allocator and page-rounding spread of a rank's peak run to run
MEMORY_SHARE = 0.05  # of the reference's peak


@dataclass
class MemoryOfRecord:
    """Both sides' memory as the probe's process read it from /proc (_outside.py), and the verdict."""

    candidate: OutsideFigures
    reference: OutsideFigures
    tolerance_bytes: int
    steps: int
    candidate_values: list = field(default_factory=list, repr=False)

    @property
    def extra_bytes(self) -> int:
        return self.candidate.peak_bytes - self.reference.peak_bytes

    @property
    def resets(self) -> int:
        """High-water-mark resets the candidate's ranks made beyond the reference's (none run a meter)."""
        return max(0, self.candidate.resets - self.reference.resets)

    @property
    def passed(self) -> bool:
        return self.extra_bytes <= self.tolerance_bytes and not self.resets

    def measured(self, prefix="record_") -> dict:
        return {**self.candidate.measured(f"{prefix}candidate_outside_"), **self.reference.measured(f"{prefix}reference_outside_"),
                f"{prefix}extra_bytes": self.extra_bytes, f"{prefix}tolerance_bytes": self.tolerance_bytes,
                f"{prefix}steps": self.steps}

    def message(self, what: str = "the candidate") -> str:
        c, r = self.candidate, self.reference
        mib = lambda b: f"{b / 2**20:,.1f} MiB"  # noqa: E731
        where = f" (shared memory {mib(c.shmem_bytes)}, memory file systems {mib(c.tmpfs_bytes)})" if c.shmem_bytes or c.tmpfs_bytes else ""
        if c.descendants_bytes:
            where += f" ({mib(c.descendants_bytes)} in {c.descendants} process(es) its ranks started)"
        parts = []
        if self.extra_bytes > self.tolerance_bytes:
            parts.append(f"{what} held {mib(c.peak_bytes)} at its busiest rank's peak over {self.steps} steps{where}, the "
                         f"reference {mib(r.peak_bytes)} — {mib(self.extra_bytes)} more (allowed {mib(self.tolerance_bytes)})")
        if self.resets:
            parts.append(f"{what}'s ranks reset their own memory high-water mark {self.resets} time(s) "
                         "(/proc/self/clear_refs): nothing in a training step does that, only code that hides its peak "
                         "from an in-process meter")
        if not parts:
            parts.append(f"{what} held {mib(c.peak_bytes)} at its busiest rank's peak{where}, the reference "
                         f"{mib(r.peak_bytes)} (allowed {mib(self.tolerance_bytes)} more)")
        return ("memory of record: " + "; ".join(parts) + ". Read by the probe's process from the ranks' /proc "
                "(the kernel's high-water mark, reset by the probe at the window's start, and statvfs of /dev/shm and "
                "tmpfs), where no rank can lower it")


def memory_of_record(candidate, reference, world_size: Optional[int] = None, args=(), steps: int = 3,
                     pause=(0.02, 0.12), backend: Optional[str] = None, timeout: float = 180, preload=(),
                     tolerance_bytes: Optional[int] = None, seed: Optional[int] = None) -> MemoryOfRecord:
    """As traffic_of_record, judged on memory: each side's busiest rank's peak above its footprint when
    every rank had joined the group (torch and the kit imported), read from outside the ranks, plus what
    memory file systems gained. The candidate may hold no more than the reference beyond MEMORY_FLOOR +
    MEMORY_SHARE of the reference's peak (unless `tolerance_bytes`), and may not reset its ranks'
    high-water marks. traffic_of_record's `memory` holds the same figures of its own runs."""
    ref, cand = _pair(candidate, reference, world_size, args, steps, pause, backend, timeout, preload, seed)
    tol = tolerance_bytes if tolerance_bytes is not None else int(MEMORY_FLOOR + MEMORY_SHARE * ref.memory.peak_bytes)
    return MemoryOfRecord(candidate=cand.memory, reference=ref.memory, tolerance_bytes=tol, steps=steps,
                          candidate_values=cand.values)


def in_private_namespace() -> bool:
    """True where this process's network namespace holds only the loopback (the sandbox's)."""
    lo = loopback()
    return bool(lo and lo["private"])


__all__ = ["TrafficRecord", "traffic_of_record", "MemoryOfRecord", "memory_of_record", "loopback", "in_private_namespace", "NOISE_FLOOR"]
