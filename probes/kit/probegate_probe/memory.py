"""Peak memory of one call: the CUDA allocator's peak on a GPU, the process's peak RSS on CPU."""
from __future__ import annotations

import gc
import os
import resource
import sys
from dataclasses import dataclass, field
from typing import List, Optional

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


@dataclass
class MemoryRecord:
    """What one call needed, seen every way the kit can (issue 29: memory outside the allocator).

    peak_bytes: the figure of record — on CUDA the larger of the allocator's peak and the device's
    growth as the driver sees it (memory cupy, raw cudaMalloc or NCCL took beside the allocator);
    on CPU the larger of the resident growth and the anonymous memory the call touched, read or
    written, wherever it was allocated (numpy, mmap, a buffer made at import): scratch held before
    the call is no longer free. host_bytes: the CPU figure also for a CUDA call (pinned host buffers).
    """

    result: object
    peak_bytes: int
    allocator_bytes: Optional[int]
    rss_bytes: int
    touched_bytes: Optional[int]
    device_bytes: Optional[int]
    notes: List[str] = field(default_factory=list)
    tmpfs_bytes: int = 0

    @property
    def host_bytes(self) -> int:
        return max(self.rss_bytes, self.touched_bytes or 0) + self.tmpfs_bytes

    def measured(self, prefix="") -> dict:
        out = {f"{prefix}peak_bytes": self.peak_bytes, f"{prefix}rss_bytes": self.rss_bytes}
        for name in ("allocator_bytes", "touched_bytes", "device_bytes", "tmpfs_bytes"):
            if getattr(self, name) is not None:
                out[f"{prefix}{name}"] = getattr(self, name)
        return out


def _clear_referenced() -> bool:
    # Writing 1 to clear_refs clears the referenced bit of every page: /proc/self/smaps' Referenced
    # then counts what was touched since, pre-existing memory included.
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("1")
        return True
    except OSError:
        return False


def _tmpfs_mounts() -> List[str]:
    """Mount points of the memory file systems this process sees (tmpfs, shm, ramfs): /dev/shm, /tmp."""
    out = []
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] in ("tmpfs", "shm", "ramfs"):
                    out.append(left.split()[4].replace("\\040", " "))
    except OSError:
        pass
    return sorted(out, key=len, reverse=True)


def _in_memory(name: str, inode: str, mounts) -> bool:
    """A mapping whose pages are memory, not a file's cache: anonymous, shared anonymous (/dev/zero),
    memfd, SysV shm, or a file on a memory file system (/dev/shm, a tmpfs /tmp), deleted or not."""
    if inode == "0":
        return not name or name.startswith(("[heap", "[stack", "[anon"))
    if name.startswith(("/dev/zero", "/memfd:", "/SYSV")):
        return True
    path = name[:-len(" (deleted)")] if name.endswith(" (deleted)") else name
    return any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounts)


def touched_anonymous_bytes() -> Optional[int]:
    """Memory (heap, numpy, mmap, stacks, shared memory, tmpfs files) referenced since the last
    clear, from smaps. Shared memory counts too (#38): scratch kept in `share_memory_()` tensors or
    /dev/shm is no more free than the heap."""
    total, counted = 0, False
    mounts = [m for m in _tmpfs_mounts() if m != "/"]
    try:
        with open("/proc/self/smaps") as fh:
            for line in fh:
                head = line.split(None, 5)
                if len(head) >= 5 and "-" in head[0] and ":" in head[3]:
                    counted = _in_memory(head[5].strip() if len(head) > 5 else "", head[4], mounts)
                elif counted and line.startswith("Referenced:"):
                    total += int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return total


def tmpfs_used_bytes() -> int:
    """Bytes held in the memory file systems this process sees (each counted once): files in
    /dev/shm or a tmpfs /tmp are memory whoever maps them, and no process's RSS shows them."""
    seen, used = set(), 0
    for m in _tmpfs_mounts():
        try:
            st = os.statvfs(m)
            dev = os.stat(m).st_dev
        except OSError:
            continue
        if dev not in seen:
            seen.add(dev)
            used += (st.f_blocks - st.f_bfree) * st.f_frsize
    return used


def memory_record(fn, *args, device=None, **kwargs) -> MemoryRecord:
    """fn(*args, **kwargs) measured as a MemoryRecord (peak_memory's figure and what it cannot see)."""
    import torch

    dev = _resolve_device(device)
    notes: List[str] = []
    gc.collect()
    allocator = device_growth = None
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
        resting = torch.cuda.memory_allocated(dev)
        free_before, _ = torch.cuda.mem_get_info(dev)
    _fresh_pages_for_large_blocks()
    exact = _reset_hwm()
    touched_ok = _clear_referenced()
    rss_before = _status_kib("VmRSS")
    tmpfs_before = tmpfs_used_bytes()
    result = fn(*args, **kwargs)
    tmpfs = max(0, tmpfs_used_bytes() - tmpfs_before)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        allocator = int(torch.cuda.max_memory_allocated(dev) - resting)
        free_after, _ = torch.cuda.mem_get_info(dev)
        device_growth = max(0, int(free_before - free_after))
        notes.append("device growth is what the driver holds after the call (a lower bound of its peak)")
    rss = max(0, _status_kib("VmHWM" if exact else "VmRSS") - rss_before) * 1024
    touched = touched_anonymous_bytes() if touched_ok else None
    if not exact:
        notes.append("clear_refs not writable: resident growth after the call only, no touched figure")
    host = max(rss, touched or 0) + tmpfs
    if tmpfs:
        notes.append(f"{tmpfs} bytes more held in memory file systems (/dev/shm, tmpfs) after the call")
    peak = max(allocator or 0, device_growth or 0) if dev.type == "cuda" else host
    return MemoryRecord(result=result, peak_bytes=peak, allocator_bytes=allocator, rss_bytes=rss,
                        touched_bytes=touched, device_bytes=device_growth, notes=notes, tmpfs_bytes=tmpfs)
