"""Megatron's CUDA/NCCL assumptions mapped onto CPU/gloo, for a job that was given no GPU.

Shared by the Megatron-LM tasks (their task.yml's `setup.include`): megatron-ddp-repeated-params (an
assignment on a fixed Megatron-LM base) and megatron-ddp-gate (a repository gate on Megatron-LM's main).

Megatron-LM's DDP and its unit tests assume a GPU: buffers are placed with
`device=torch.cuda.current_device()`, the test harness calls `torch.cuda.set_device(rank %
torch.cuda.device_count())` and `init_process_group(backend='nccl')`, partial distributed
optimizers make `torch.cuda.Stream`s, and a few barriers pass NCCL's `device_ids`. On a CPU
runner none of that exists. `install()` maps each of these onto the CPU and gloo, so the same
Megatron code and the same tests run there unchanged:

- device placement: `torch.cuda.current_device()` is the CPU device, `set_device` accepts the
  one device there is, `device_count()` is 1 (the CPU), `synchronize()` returns at once (CPU
  kernels are synchronous);
- streams and events: one CPU "stream" that every `Stream`/`default_stream`/`current_stream`
  stands for, `torch.cuda.stream(s)` a no-op context, events that are complete once recorded
  (a gloo collective's work object is what orders communication on the CPU, and Megatron waits
  on it explicitly);
- process groups: backend `nccl` becomes `gloo`; NCCL-only options (`pg_options` of
  ProcessGroupNCCL, `device_id`, a barrier's `device_ids`) are dropped.

What it does not change: which collectives Megatron issues, when, on which buffers, with which
reduce op; the dtypes (bf16 parameters, fp32 grad buffers); any Megatron or test code. On a job
that has a GPU (`torch.cuda.is_available()`), `install()` does nothing: the task runs on
CUDA/NCCL as before.
"""
import contextlib
import functools

import torch
import torch.distributed as dist

_installed = False


def active() -> bool:
    """True once install() has mapped CUDA/NCCL onto CPU/gloo in this process."""
    return _installed


class _CpuStream:
    """The one CPU "stream": CPU ops run in issue order, so waiting on it is immediate.

    It stands for `torch.cuda.Stream` itself, so it is a class (code annotates with
    `torch.cuda.Stream | None` at import, and checks isinstance), and every construction returns
    the one instance."""

    device = torch.device("cpu")
    _one = None

    def __new__(cls, device=None, priority=0, **kwargs):
        if cls._one is None:
            cls._one = super().__new__(cls)
        return cls._one

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        return event if event is not None else _CpuEvent()

    def synchronize(self):
        pass

    def query(self):
        return True

    def __eq__(self, other):
        return isinstance(other, _CpuStream)

    def __hash__(self):
        return 0


_STREAM = _CpuStream()


class _CpuEvent:
    """A CUDA event on the CPU: complete as soon as it is recorded."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        pass

    def record(self, stream=None):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True

    def synchronize(self):
        pass


def _one_device(device=None):
    """torch.cuda.set_device on the CPU: index 0 (rank % device_count()), the CPU, or None."""
    if device is None or device == 0 or str(device) in ("cpu", "cuda", "cuda:0"):
        return None
    raise RuntimeError(f"CPU run (no GPU given to this job): there is one device, not {device!r}")


def _gloo(backend):
    """A backend string with NCCL replaced by gloo ('nccl', 'cpu:gloo,cuda:nccl', ...)."""
    if backend is None:
        return None
    text = str(backend).lower()
    if "nccl" not in text:
        return backend
    return "gloo"


def _drop_nccl_options(kwargs):
    options = kwargs.get("pg_options")
    if options is not None and "NCCL" in type(options).__qualname__.upper():
        kwargs["pg_options"] = None
    kwargs.pop("device_id", None)


def install() -> bool:
    """Map CUDA/NCCL onto CPU/gloo in this process when it has no GPU; True when it did.

    Idempotent. Call it before the first process group is made (the pytest plugin does, in
    pytest_configure; a probe rank does before it touches Megatron).
    """
    global _installed
    if _installed:
        return True
    if torch.cuda.is_available():
        return False
    cpu = torch.device("cpu")
    cuda = torch.cuda
    cuda.current_device = lambda: cpu
    cuda.set_device = _one_device
    cuda.device_count = lambda: 1
    cuda.synchronize = lambda device=None: None
    cuda.Stream = _CpuStream
    cuda.default_stream = lambda device=None: _STREAM
    cuda.current_stream = lambda device=None: _STREAM
    cuda.stream = lambda stream=None: contextlib.nullcontext()
    cuda.Event = _CpuEvent

    init = dist.init_process_group

    @functools.wraps(init)
    def init_process_group(backend=None, *args, **kwargs):
        _drop_nccl_options(kwargs)
        if "backend" in kwargs:
            kwargs["backend"] = _gloo(kwargs["backend"])
            return init(*args, **kwargs)
        return init(_gloo(backend), *args, **kwargs)

    new = dist.new_group

    @functools.wraps(new)
    def new_group(*args, **kwargs):
        _drop_nccl_options(kwargs)
        if "backend" in kwargs:
            kwargs["backend"] = _gloo(kwargs["backend"])
        args = list(args)
        if len(args) >= 3:  # new_group(ranks, timeout, backend, pg_options, ...)
            args[2] = _gloo(args[2])
        if len(args) >= 4 and args[3] is not None and "NCCL" in type(args[3]).__qualname__.upper():
            args[3] = None
        return new(*args, **kwargs)

    barrier = dist.barrier

    @functools.wraps(barrier)
    def barrier_(group=None, async_op=False, device_ids=None):
        return barrier(group=group, async_op=async_op)

    dist.init_process_group = init_process_group
    dist.new_group = new_group
    dist.barrier = barrier_
    _installed = True
    return True
