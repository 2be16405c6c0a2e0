"""Shared set-up of the megatron-ddp-repeated-params probes (not itself a probe: it does not match probe_*.py).

The requirement (prompt.md): with overlap_grad_reduce, a parameter whose gradient reaches its
backward hook more than once in an iteration is still reduced once per iteration, by one
collective per bucket group, launched from the backward hook once every contribution of the
iteration is in (from the second iteration on). The model here has such a parameter: `shared`
gets a gradient from the model's loss and again from an auxiliary loss that is backpropagated
on its own, as models with a shared layer, or multi-token prediction heads, do.

Where the probes run: on a job with a GPU, one NCCL rank on it (NCCL refuses two ranks on one
GPU); on a CPU runner, PROBEGATE_WORLD_SIZE gloo ranks and at least two, each rank with batches
of its own, through the task's setup shim (probegate_cpu_shim: Megatron's CUDA placement and
streams onto the CPU). Every judgement is the same at any world size: what a bucket holds when
its reduction is issued is the rank's full local gradient (scaled by 1/n, as Megatron does
before a SUM, or not), main_grad after finish_grad_sync is the ranks' mean gradient, and each
rank issues one reduction per bucket group per iteration.
"""
# PROBEGATE-CANARY-MCORE-DDP-5e1b7a
import copy
import os

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from probegate_probe import RankError, emit, locate, run_ranks  # bound before the submission is imported

DIM = 96
ITERATIONS = 4
GRAD_FILE = "megatron/core/distributed/param_and_grad_buffer.py"
RANK_TIMEOUT_S = 240


def world():
    """(ranks, backend): one NCCL rank on the job's GPU; on the CPU, gloo and at least two ranks."""
    backend = os.environ.get("PROBEGATE_BACKEND") or ("nccl" if torch.cuda.is_available() else "gloo")
    if backend == "nccl" and torch.cuda.is_available():
        return 1, "nccl"
    return max(2, int(os.environ.get("PROBEGATE_WORLD_SIZE") or 2)), "gloo"


def run(fn, *args):
    """fn(rank, n, *args) on this job's ranks (run_ranks: it raises RankError when a rank fails)."""
    n, backend = world()
    return run_ranks(fn, world_size=n, args=args, backend=backend, timeout=RANK_TIMEOUT_S)


class Repeated(torch.nn.Module):
    """`shared` takes part in two backward passes per iteration; `head` in one."""

    def __init__(self):
        super().__init__()
        self.shared = torch.nn.Linear(DIM, DIM)
        self.head = torch.nn.Linear(DIM, DIM)

    def forward(self, x):
        return self.head(torch.tanh(self.shared(x)))


class OneParam(torch.nn.Module):
    """One parameter, in both backward passes: a bucket group that holds a single parameter, which
    reports twice per iteration (what is asked holds for every model, whatever its groups hold)."""

    def __init__(self):
        super().__init__()
        self.shared = torch.nn.Linear(DIM, DIM, bias=False)

    def forward(self, x):
        return torch.tanh(self.shared(x))


MODELS = {"repeated": Repeated, "one-param": OneParam}


def backward_passes(module, x1, x2, between=None):
    """The iteration's two backward passes: the model's loss, then an auxiliary loss on `shared`."""
    module(x1).square().mean().backward()
    if between is not None:
        between()
    module.shared(x2).square().mean().backward()


def device():
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")


def init_rank():
    """In a rank whose process group run_ranks made: the CPU shim (no-op on a GPU), Megatron's groups."""
    import probegate_cpu_shim

    probegate_cpu_shim.install()
    from megatron.core import parallel_state

    parallel_state.initialize_model_parallel()


def batches(rank, seed=1234):
    """Rank `rank`'s batches: every rank can rebuild every other rank's data."""
    g = torch.Generator(device="cpu").manual_seed(seed + 1000 * rank)
    return [(torch.randn(8, DIM, generator=g).to(device()), torch.randn(8, DIM, generator=g).to(device()))
            for _ in range(ITERATIONS)]


def make_model(seed=7, kind="repeated"):
    torch.manual_seed(seed)
    return MODELS[kind]().to(device())


def local_gradients(model, data):
    """Each iteration's full local gradient per parameter name, by plain autograd (no submission code)."""
    plain = copy.deepcopy(model)
    out = []
    for x1, x2 in data:
        plain.zero_grad(set_to_none=True)
        backward_passes(plain, x1, x2)
        out.append({n: p.grad.detach().float().clone() for n, p in plain.named_parameters()})
    return out


def mean_gradients(model, n, seed=1234):
    """Each iteration's gradient averaged over the n ranks' batches: main_grad after the reduction."""
    per_rank = [local_gradients(model, batches(r, seed)) for r in range(n)]
    return [{k: sum(g[it][k] for g in per_rank) / n for k in per_rank[0][it]} for it in range(ITERATIONS)]


def wrap(model, overlap=True):
    """Megatron's DDP, one bucket, fp32 gradient buffer, SUM (each rank's gradient scaled by 1/n first)."""
    from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
    from megatron.core.transformer import TransformerConfig

    ddp_config = DistributedDataParallelConfig(
        grad_reduce_in_fp32=True,
        overlap_grad_reduce=overlap,
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


def holds_full_gradient(got, want, n) -> bool:
    """The rank's whole local gradient, as issued: scaled by 1/n before a SUM, or not scaled."""
    return any(torch.allclose(got, want * s, rtol=1e-4, atol=1e-6) for s in {1.0, 1.0 / n})


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


def rank_failure(exc: RankError) -> str:
    """A failed or hung rank, in words for the check's message."""
    if exc.timed_out:
        return f"a rank hung: {exc.summary}"
    return f"rank {exc.rank} raised {exc.summary[:300]}"


def report_crash(check_ids, category, exc, requirements):
    """Every check of this probe failed: training with a repeated parameter did not complete."""
    what = rank_failure(exc) if isinstance(exc, RankError) else f"{type(exc).__name__}: {str(exc)[:300]}"
    for check_id in check_ids:
        emit(check_id, category, "failed",
             f"training with a repeated parameter and overlap_grad_reduce=True failed: {what}",
             location=grad_location(), requirements=requirements)
