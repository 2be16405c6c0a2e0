"""Shared set-up of the megatron-ddp-repeated-params probes (not itself a probe: it does not match probe_*.py).

The requirement (prompt.md): with overlap_grad_reduce, a parameter whose gradient reaches its
backward hook more than once in an iteration is still reduced once per iteration, by one
collective per bucket group, launched from the backward hook once every contribution of the
iteration is in (from the second iteration on). The model here has such a parameter: `shared`
gets a gradient from the model's loss and again from an auxiliary loss that is backpropagated
on its own, as models with a shared layer, or multi-token prediction heads, do.
"""
# PROBEGATE-CANARY-MCORE-DDP-5e1b7a
import copy
import os
import tempfile

import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode

from probegate_probe import emit, locate  # bound before the submission is imported

DIM = 96
ITERATIONS = 4
GRAD_FILE = "megatron/core/distributed/param_and_grad_buffer.py"


class Repeated(torch.nn.Module):
    """`shared` takes part in two backward passes per iteration; `head` in one."""

    def __init__(self):
        super().__init__()
        self.shared = torch.nn.Linear(DIM, DIM)
        self.head = torch.nn.Linear(DIM, DIM)

    def forward(self, x):
        return self.head(torch.tanh(self.shared(x)))


def backward_passes(module, x1, x2):
    """The iteration's two backward passes: the model's loss, then an auxiliary loss on `shared`."""
    module(x1).square().mean().backward()
    module.shared(x2).square().mean().backward()


def init_distributed():
    """One NCCL rank on the job's GPU (the probes run where the task's requires: holds)."""
    torch.cuda.set_device(0)
    rdzv = os.path.join(tempfile.mkdtemp(prefix="pg-mcore-"), "rdzv")
    dist.init_process_group("nccl", init_method=f"file://{rdzv}", rank=0, world_size=1)
    from megatron.core import parallel_state

    parallel_state.initialize_model_parallel()


def batches(seed=1234):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return [(torch.randn(8, DIM, generator=g).cuda(), torch.randn(8, DIM, generator=g).cuda()) for _ in range(ITERATIONS)]


def make_model(seed=7):
    torch.manual_seed(seed)
    return Repeated().cuda()


def expected_gradients(model, data):
    """Each iteration's full local gradient per parameter name, by plain autograd (no submission code)."""
    plain = copy.deepcopy(model)
    out = []
    for x1, x2 in data:
        plain.zero_grad(set_to_none=True)
        backward_passes(plain, x1, x2)
        out.append({n: p.grad.detach().float().clone() for n, p in plain.named_parameters()})
    return out


def wrap(model):
    """Megatron's DDP with overlapped gradient reduction, one bucket, fp32 gradient buffer, SUM."""
    from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
    from megatron.core.transformer import TransformerConfig

    ddp_config = DistributedDataParallelConfig(
        grad_reduce_in_fp32=True,
        overlap_grad_reduce=True,
        use_distributed_optimizer=False,
        bucket_size=None,
        average_in_collective=False,
    )
    return DistributedDataParallel(TransformerConfig(num_attention_heads=1, num_layers=1), ddp_config=ddp_config, module=model)


def param_slices(ddp):
    """name -> (buffer index, start, numel): where each parameter's main_grad sits in the grad buffers."""
    where = {}
    for name, p in ddp.module.named_parameters():
        for i, buf in enumerate(ddp.buffers):
            base = buf.grad_data
            start = (p.main_grad.data_ptr() - base.data_ptr()) // base.element_size()
            if 0 <= start < base.numel():
                where[name] = (i, start, p.numel())
                break
    return where


def is_reduction(func) -> bool:
    name = func._schema.name
    return name.startswith("c10d::") and ("allreduce" in name or "reduce_scatter" in name)


class GradCollectives(TorchDispatchMode):
    """Records each gradient reduction as it is issued: in which phase, and the grad buffers then."""

    def __init__(self, ddp):
        super().__init__()
        self.ddp = ddp
        self.phase = "backward"
        self.iteration = 0
        self.records = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if is_reduction(func):
            # Read on the current stream: ordered after every gradient kernel issued before the collective.
            snapshot = [b.grad_data.detach().float().clone() for b in self.ddp.buffers]
            self.records.append({"iteration": self.iteration, "phase": self.phase, "buffers": snapshot, "op": func._schema.name})
        return func(*args, **(kwargs or {}))


def grad_location():
    """Where the submission's register_grad_ready is, for the check's location."""
    try:
        from megatron.core.distributed.param_and_grad_buffer import _ParamAndGradBucketGroup

        return locate(_ParamAndGradBucketGroup.register_grad_ready)
    except Exception:
        return {"path": GRAD_FILE}


def report_crash(check_id, category, exc):
    emit(check_id, category, "failed", f"training with a repeated parameter and overlap_grad_reduce=True raised {type(exc).__name__}: {str(exc)[:300]}", location=grad_location())
