"""Peak memory of one call: the CUDA allocator's peak on a GPU, the process's peak RSS on CPU."""
from __future__ import annotations

import gc
import resource
import sys

_caveat = None  # set when the CPU figure is only a lower bound


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _reset_hwm() -> bool:
    # Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0).
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


_M_MMAP_THRESHOLD = -3
_libc = None


def _fresh_pages_for_large_blocks() -> None:
    """Make large allocations fault in new pages, so RSS sees them.

    glibc raises its mmap threshold after large frees (up to 32 MiB) and then serves blocks
    from heap memory that is still resident: an allocation made there adds nothing to RSS. A
    fixed threshold keeps blocks >= 128 KiB on fresh mmaps; malloc_trim returns what the heap
    holds now. Smaller allocations are still served from resident heap memory.
    """
    global _libc
    try:
        if _libc is None:
            import ctypes

            _libc = ctypes.CDLL("libc.so.6")
            _libc.mallopt(_M_MMAP_THRESHOLD, 128 * 1024)
        _libc.malloc_trim(0)
    except (OSError, AttributeError):
        _libc = False


def _resolve_device(device):
    import torch

    if device is not None:
        return torch.device(device)
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def peak_memory(fn, *args, device=None, **kwargs):
    """(fn(*args, **kwargs), peak bytes above the resting level while fn ran).

    CUDA: max_memory_allocated() − memory_allocated() before, after gc and empty_cache.
    CPU: VmHWM after − VmRSS before, with VmHWM reset through /proc/self/clear_refs. Without
    clear_refs the figure comes from ru_maxrss and only counts growth past the process's
    earlier peak (a lower bound); `peak_memory_caveat()` then says so.
    """
    global _caveat
    import torch

    dev = _resolve_device(device)
    gc.collect()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
        resting = torch.cuda.memory_allocated(dev)
        result = fn(*args, **kwargs)
        torch.cuda.synchronize(dev)
        return result, int(torch.cuda.max_memory_allocated(dev) - resting)
    _fresh_pages_for_large_blocks()
    if _reset_hwm():
        _caveat = None
        before = _status_kib("VmRSS")
        result = fn(*args, **kwargs)
        after = _status_kib("VmHWM")
        return result, max(0, after - before) * 1024
    _caveat = "clear_refs not writable: ru_maxrss growth only (a lower bound)"
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is KiB on Linux, bytes on macOS
    before_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = fn(*args, **kwargs)
    after_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return result, max(0, after_peak - before_peak) * scale


def peak_memory_caveat():
    """None when the last CPU measurement was exact, else why it is a lower bound."""
    return _caveat
