"""Interleaved A/B timing against a reference in the same process (PROBES.md, Time)."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional

from .emit import RunnerBusy

# A measurement was contended when its reference calls spent more than this share of their wall
# time waiting on a run queue (runnable, but another task had the CPU). The reference is the probe's
# own code, so its waits come from outside the job — on a well-run runner a time probe's cores are
# its own. The candidate's waits are not looked at: its own threads or ranks may cause them, and then
# they are part of what it costs.
CONTENDED_SHARE = 0.2


@dataclass
class TimeRatio:
    median: float                 # median of per-pair t_candidate / t_reference
    ratios: List[float]
    candidate_s: float            # median seconds of the candidate
    reference_s: float
    margin: float
    passed: bool                  # median <= margin
    sm_clock_mhz: Optional[int] = None
    notes: List[str] = field(default_factory=list)
    reference_wait_share: Optional[float] = None  # run-queue wait / wall time of the reference calls; None: not measurable here

    def measured(self, prefix="") -> dict:
        out = {f"{prefix}ratio": round(self.median, 4), f"{prefix}candidate_s": self.candidate_s,
               f"{prefix}reference_s": self.reference_s, f"{prefix}margin": self.margin,
               f"{prefix}repeats": len(self.ratios)}
        if self.sm_clock_mhz is not None:
            out[f"{prefix}sm_clock_mhz"] = self.sm_clock_mhz
        if self.reference_wait_share is not None:
            out[f"{prefix}reference_wait_share"] = round(self.reference_wait_share, 4)
        return out


def thread_run_delay() -> Optional[float]:
    """Seconds the calling thread has waited on a run queue so far (/proc/thread-self/schedstat,
    second field, ns); None where the kernel does not say (no schedstat, not Linux)."""
    try:
        with open("/proc/thread-self/schedstat") as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def _cuda_active() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available() and torch.cuda.is_initialized()


def _sm_clock() -> Optional[int]:
    try:
        import pynvml
        import torch
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        index = torch.cuda.current_device()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        return int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except Exception:
        return None


def time_ratio(candidate: Callable, reference: Callable, repeats: int = 15, warmup: int = 3,
               margin: float = 1.25, sync: Optional[Callable] = None,
               run_delay: Callable[[], Optional[float]] = thread_run_delay) -> TimeRatio:
    """Time candidate against reference, interleaved, alternating which runs first.

    `sync` (e.g. dist.barrier) runs before each timed call so ranks stay in lockstep. Never time
    inside a CollectiveCounter: counting slows collectives down.

    `run_delay` (this thread's run-queue wait, from the kernel) tells whether the runner's CPUs were
    oversubscribed while timing: when the reference calls waited for a CPU more than CONTENDED_SHARE
    of their time and the candidate is over the margin, the failure cannot be told from the
    contention, and RunnerBusy is raised (an `error` check, which the engine measures again) instead.
    A pass stays a pass: both arms ran under the same contention. No pair is left out, which would
    bias the ratio toward the arm that happened to wait.
    """
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    cuda = _cuda_active()
    if cuda:
        import torch

    def timed(fn, watch=False):
        """Seconds fn took, and with `watch` how long this thread waited for a CPU meanwhile (None: unknown)."""
        if sync is not None:
            sync()
        if cuda:
            torch.cuda.synchronize()
        before = run_delay() if watch else None
        start = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        if not watch:
            return elapsed
        after = run_delay()
        return elapsed, (None if before is None or after is None else max(0.0, after - before))

    for _ in range(warmup):
        timed(candidate)
        timed(reference)
    ratios, cand_times, ref_times = [], [], []
    ref_wait, measurable = 0.0, True
    for i in range(repeats):
        if i % 2 == 0:
            tc = timed(candidate)
            tr, wr = timed(reference, watch=True)
        else:
            tr, wr = timed(reference, watch=True)
            tc = timed(candidate)
        if wr is None:
            measurable = False
        else:
            ref_wait += wr
        cand_times.append(tc)
        ref_times.append(tr)
        ratios.append(tc / tr if tr > 0 else float("inf"))
    median = statistics.median(ratios)
    share = ref_wait / sum(ref_times) if measurable and sum(ref_times) > 0 else None
    passed = median <= margin
    if not passed and share is not None and share > CONTENDED_SHARE:
        raise RunnerBusy(
            f"the runner's CPUs were oversubscribed while timing: the reference calls spent {share:.0%} of their time "
            f"waiting for a CPU (more than {CONTENDED_SHARE:.0%}), so the measured ratio {median:.2f} (allowed {margin:g}) "
            f"cannot be told from the contention; measure again on a runner whose cores are the job's own",
            measured={"ratio": round(median, 4), "margin": margin, "reference_wait_share": round(share, 4)})
    return TimeRatio(median=median, ratios=ratios, candidate_s=statistics.median(cand_times),
                     reference_s=statistics.median(ref_times), margin=margin,
                     passed=passed, sm_clock_mhz=_sm_clock() if cuda else None,
                     reference_wait_share=share)
