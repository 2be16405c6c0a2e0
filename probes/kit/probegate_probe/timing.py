"""Interleaved A/B timing against a reference in the same process (PROBES.md, Time)."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional


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

    def measured(self, prefix="") -> dict:
        out = {f"{prefix}ratio": round(self.median, 4), f"{prefix}candidate_s": self.candidate_s,
               f"{prefix}reference_s": self.reference_s, f"{prefix}margin": self.margin,
               f"{prefix}repeats": len(self.ratios)}
        if self.sm_clock_mhz is not None:
            out[f"{prefix}sm_clock_mhz"] = self.sm_clock_mhz
        return out


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
               margin: float = 1.25, sync: Optional[Callable] = None) -> TimeRatio:
    """Time candidate against reference, interleaved, alternating which runs first.

    `sync` (e.g. dist.barrier) runs before each timed call so ranks stay in lockstep. Never time
    inside a CollectiveCounter: counting slows collectives down.
    """
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    cuda = _cuda_active()
    if cuda:
        import torch

    def timed(fn) -> float:
        if sync is not None:
            sync()
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - start

    for _ in range(warmup):
        timed(candidate)
        timed(reference)
    ratios, cand_times, ref_times = [], [], []
    for i in range(repeats):
        if i % 2 == 0:
            tc = timed(candidate)
            tr = timed(reference)
        else:
            tr = timed(reference)
            tc = timed(candidate)
        cand_times.append(tc)
        ref_times.append(tr)
        ratios.append(tc / tr if tr > 0 else float("inf"))
    median = statistics.median(ratios)
    return TimeRatio(median=median, ratios=ratios, candidate_s=statistics.median(cand_times),
                     reference_s=statistics.median(ref_times), margin=margin,
                     passed=median <= margin, sm_clock_mhz=_sm_clock() if cuda else None)
