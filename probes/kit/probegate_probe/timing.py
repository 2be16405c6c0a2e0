"""Interleaved A/B timing against a reference in the same process (PROBES.md, Time)."""
from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional

from ._window import _Settle, _materialize, _plain
from .emit import ProbeFailure, RunnerBusy

# A measurement was contended when its reference calls spent more than this share of their wall
# time waiting on a run queue (runnable, but another task had the CPU). The reference is the probe's
# own code, so its waits come from outside the job — on a well-run runner a time probe's cores are
# its own. The candidate's waits are not looked at: its own threads or ranks may cause them, and then
# they are part of what it costs.
CONTENDED_SHARE = 0.2
PAUSE_S = (0.012, 0.03)  # seconds between timed calls: a training step's gap, never a burst (#38)


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
    mismatches: List[str] = field(default_factory=list)  # with mismatch="record": the timed inputs whose outputs differed

    def measured(self, prefix="") -> dict:
        out = {f"{prefix}ratio": round(self.median, 4), f"{prefix}candidate_s": self.candidate_s,
               f"{prefix}reference_s": self.reference_s, f"{prefix}margin": self.margin,
               f"{prefix}repeats": len(self.ratios)}
        if self.sm_clock_mhz is not None:
            out[f"{prefix}sm_clock_mhz"] = self.sm_clock_mhz
        if self.reference_wait_share is not None:
            out[f"{prefix}reference_wait_share"] = round(self.reference_wait_share, 4)
        return out


# How long the timed window waits, after a call returned, for the threads and processes the call
# started: their work is the call's (issue 29: a background thread finishing after the timer).
SETTLE_S = 30.0


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


def _same(a, b) -> Optional[str]:
    """None when two outputs agree (tensors: allclose, NaN in the same places), else what differs."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        a = _plain(a).detach()
        b = _plain(b).detach()
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"shape/dtype {tuple(a.shape)} {a.dtype} vs {tuple(b.shape)} {b.dtype}"
        if a.is_floating_point() or a.is_complex():
            ok = torch.allclose(a.cpu(), b.cpu(), rtol=1e-4, atol=1e-6, equal_nan=True)
        else:
            ok = torch.equal(a.cpu(), b.cpu())
        if ok:
            return None
        diff = (a.cpu().double() - b.cpu().double()).abs()
        return f"max abs diff {float(diff.max()):.3g}"
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            found = _same(x, y)
            if found:
                return f"[{i}]: {found}"
        return None
    try:
        return None if bool(a == b) else f"{a!r:.60} vs {b!r:.60}"
    except Exception:
        return None if repr(a) == repr(b) else "outputs differ"


# A candidate's CPU time counts as more work only when it exceeds the reference's by at least this
# much per call (seconds) as well as by the margin: calls that mostly sleep or wait have CPU times of
# tens of microseconds, whose ratio is noise (wake-ups and cold caches alone moved a 2 ms sleep's 2x).
MIN_EXTRA_CPU_S = 1e-3


def _cpu_ratio(cpu_times: dict, warmup: int) -> Optional[float]:
    """Least process CPU time (every thread's) of the timed candidate calls over the reference's;
    None when the candidate's is not MIN_EXTRA_CPU_S above the reference's (too little to judge).

    The least, not the median: contention only adds CPU time to a call (context switches, caches
    the other processes evicted), so on a busy runner the median of equal work drifted to 1.53x
    (CI, three hogs on the CPU). A call that does more work on every call keeps its ratio in the
    least one; work on some calls only is then `RunnerBusy` (cannot decide), never a pass."""
    cand, ref = cpu_times["candidate"][warmup:], cpu_times["reference"][warmup:]
    if not cand or not ref:
        return None
    c, r = min(cand), min(ref)
    if c - r < MIN_EXTRA_CPU_S:
        return None
    return c / r if r > 0 else float("inf")


def time_ratio(candidate: Callable, reference: Callable, repeats: int = 15, warmup: int = 3,
               margin: float = 1.25, sync: Optional[Callable] = None,
               run_delay: Callable[[], Optional[float]] = thread_run_delay,
               inputs: Optional[Callable[[int], tuple]] = None,
               equal: Optional[Callable] = None, mismatch: str = "raise",
               pause: Optional[tuple] = PAUSE_S) -> TimeRatio:
    """Time candidate against reference, interleaved, alternating which runs first.

    `sync` (e.g. dist.barrier) runs before each timed call so ranks stay in lockstep. Never time
    inside a CollectiveCounter: counting slows collectives down.

    `run_delay` (this thread's run-queue wait, from the kernel) tells whether the runner's CPUs were
    oversubscribed while timing: when the reference calls waited for a CPU more than CONTENDED_SHARE
    of their time and the candidate is over the margin, the failure cannot be told from the
    contention, and RunnerBusy is raised (an `error` check, which the engine measures again) instead.
    A pass stays a pass: both arms ran under the same contention. No pair is left out, which would
    bias the ratio toward the arm that happened to wait. A busy runner does not excuse work: on CPU,
    when the candidate's process CPU time (every thread's, the call's own threads included) is also
    over the margin against the reference's, waiting cannot explain it, and the check fails
    (ProbeFailure naming both ratios) instead of RunnerBusy — so a trick that makes the candidate
    slow (a cache defeated by `inputs`, work forced back into the window) is a failure on a busy
    box too. Under CUDA the rule is not applied (the work is the device's, and synchronisation may
    spin a CPU).

    The timed window of each call (issue 29) ends only when its result is plain (a tensor subclass,
    a lazy or pending result, is forced to a plain tensor inside the window) and the threads and
    child processes the call started have finished (a candidate's still running SETTLE_S later
    fails the check). `inputs(i)` gives the arguments of call i (warm-up calls first): each call
    gets its own, made before any timing, so a cache of earlier answers has nothing to answer, and
    each candidate output is compared with the reference's on the same input (`equal(a, b)` → bool,
    default: allclose for tensors, == otherwise), so a fast wrong answer on a probe-looking input
    fails too. Without `inputs` both are called with no arguments, as before. `mismatch="record"`
    lists the differing inputs in `TimeRatio.mismatches` instead of raising, for a probe that reports
    wrong outputs as a check of their own (a value flaw is not a time flaw) — the probe must then
    emit that check, failed when the list is not empty.

    `pause` (low, high seconds; None: none): a drawn pause before every call, at a training loop's
    cadence, outside the timed window (#38 item 3): a submission that tells the probe by the burst of
    rapid calls a timing loop makes sees no burst. The draw is fixed per process (same pauses for
    both arms, alternating).
    """
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    if mismatch not in ("raise", "record"):
        raise ValueError(f"mismatch must be 'raise' or 'record', got {mismatch!r}")
    mismatches: List[str] = []
    cuda = _cuda_active()
    if cuda:
        import torch

    calls = [tuple(inputs(i)) for i in range(warmup + repeats)] if inputs is not None else None
    outputs = {}
    cpu_times = {"candidate": [], "reference": []}
    draw = random.Random(0xCADE)

    def timed(fn, call, watch=False, arm="candidate"):
        """Seconds fn took, and with `watch` how long this thread waited for a CPU meanwhile (None: unknown)."""
        args = calls[call] if calls is not None else ()
        if sync is not None:
            sync()
        if cuda:
            torch.cuda.synchronize()
        if pause:
            time.sleep(draw.uniform(*pause))
        before = run_delay() if watch else None
        settle = _Settle()
        cpu_start = time.process_time()
        start = time.perf_counter()
        out = fn(*args)
        _materialize(out)
        left = settle.wait(time.monotonic() + SETTLE_S)
        if cuda:
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        cpu_times[arm].append(time.process_time() - cpu_start)
        if left and arm == "candidate":
            raise ProbeFailure(f"the candidate's call {call + 1} left {', '.join(left[:3])} running {SETTLE_S:g} s after it "
                               "returned: its work is outside the timed window")
        if calls is not None:
            outputs[arm] = out
        if not watch:
            return elapsed
        after = run_delay()
        return elapsed, (None if before is None or after is None else max(0.0, after - before))

    def compare(call):
        if calls is None:
            return
        a, b = outputs.pop("candidate", None), outputs.pop("reference", None)
        differs = (None if equal(a, b) else "equal() said no") if equal is not None else _same(a, b)
        if differs:
            text = f"on timed input {call + 1} the candidate's output differs from the reference's ({differs})"
            if mismatch == "record":
                mismatches.append(text)
                return
            raise ProbeFailure(f"{text}: a fast answer must also be the right one")

    for w in range(warmup):
        timed(candidate, w)
        timed(reference, w, arm="reference")
        compare(w)
    ratios, cand_times, ref_times = [], [], []
    ref_wait, measurable = 0.0, True
    for i in range(repeats):
        call = warmup + i
        if i % 2 == 0:
            tc = timed(candidate, call)
            tr, wr = timed(reference, call, watch=True, arm="reference")
        else:
            tr, wr = timed(reference, call, watch=True, arm="reference")
            tc = timed(candidate, call)
        compare(call)
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
        cpu = _cpu_ratio(cpu_times, warmup) if not cuda else None
        if cpu is not None and cpu > margin:
            raise ProbeFailure(
                f"the candidate took {median:.2f}x the time of the reference (allowed {margin:g}) and {cpu:.2f}x its CPU time: "
                f"the runner was busy (the reference calls spent {share:.0%} of their time waiting for a CPU), but "
                "CPU time does not grow by waiting, so the candidate's calls do that much more work",
                measured={"ratio": round(median, 4), "cpu_ratio": round(cpu, 4), "margin": margin,
                          "reference_wait_share": round(share, 4)})
        raise RunnerBusy(
            f"the runner's CPUs were oversubscribed while timing: the reference calls spent {share:.0%} of their time "
            f"waiting for a CPU (more than {CONTENDED_SHARE:.0%}), so the measured ratio {median:.2f} (allowed {margin:g}) "
            f"cannot be told from the contention; measure again on a runner whose cores are the job's own",
            measured={"ratio": round(median, 4), "margin": margin, "reference_wait_share": round(share, 4)})
    return TimeRatio(median=median, ratios=ratios, candidate_s=statistics.median(cand_times),
                     reference_s=statistics.median(ref_times), margin=margin,
                     passed=passed, sm_clock_mhz=_sm_clock() if cuda else None,
                     reference_wait_share=share, mismatches=mismatches)
