"""Shared helpers of the weight-sync probes: deterministic probe models, bitwise comparison, plans.

Probe models are built here, not from the submission's PolicyNet, so expectations never depend on
code the submission could change."""
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

Spec = Tuple[Tuple[int, ...], torch.dtype]

_INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_equal = torch.equal  # bound before any submission code runs in this process


class ProbeModel(nn.Module):
    """Parameters of the given shapes/dtypes, named `blocks.<i>.weight` in spec order."""

    def __init__(self, specs: Sequence[Spec], device=None):
        super().__init__()
        self.blocks = nn.ModuleList()
        for shape, dtype in specs:
            holder = nn.Module()
            holder.weight = nn.Parameter(torch.empty(shape, dtype=dtype, device=device))
            self.blocks.append(holder)


def values(specs: Sequence[Spec], seed: int) -> List[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g).to(dtype) for shape, dtype in specs]


@torch.no_grad()
def build(specs: Sequence[Spec], seed: int, device) -> ProbeModel:
    """A model with seeded random weights, drawn in place so no temporaries linger on the heap."""
    model = ProbeModel(specs, device=device)
    g = torch.Generator(device=device).manual_seed(seed)
    for p in model.parameters():
        p.normal_(generator=g)
    return model


@torch.no_grad()
def load(model: nn.Module, vals: Sequence[torch.Tensor]) -> None:
    # copy_ keeps the trainer's tensors where they are, as an optimizer step would.
    for p, v in zip(model.parameters(), vals):
        p.copy_(v.to(p.device))


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    view = _INT_VIEW[a.element_size()]
    return _equal(a.detach().reshape(-1).view(view), b.detach().reshape(-1).view(view))


def first_difference(model: nn.Module, expected: Sequence[torch.Tensor]) -> Optional[Dict]:
    """None when every parameter is bitwise equal to `expected`, else what differs first."""
    named = list(model.named_parameters())
    if len(named) != len(expected):
        return {"name": "<model>", "detail": "has %d parameters, expected %d" % (len(named), len(expected))}
    for (name, p), want in zip(named, expected):
        got = p.detach().cpu()
        if got.dtype != want.dtype or got.shape != want.shape:
            return {"name": name, "detail": "is %s %s, expected %s %s"
                    % (str(got.dtype), tuple(got.shape), str(want.dtype), tuple(want.shape))}
        if not bitwise_equal(got, want):
            diff = (got.double() - want.double()).abs().max().item()
            return {"name": name, "detail": "values differ (max |diff| %.3g)" % diff}
    return None


def nbytes(specs: Sequence[Spec]) -> int:
    total = 0
    for shape, dtype in specs:
        n = 1
        for d in shape:
            n *= d
        total += n * torch.empty((), dtype=dtype).element_size()
    return total


def greedy_bucket_count(specs: Sequence[Spec], bucket_bytes: int) -> int:
    """Buckets an in-order greedy packing needs, one open bucket per dtype."""
    open_bytes: Dict[torch.dtype, int] = {}
    count = 0
    for shape, dtype in specs:
        size = nbytes([(shape, dtype)])
        if dtype not in open_bytes or open_bytes[dtype] + size > bucket_bytes:
            count += 1
            open_bytes[dtype] = 0
        open_bytes[dtype] += size
    return count


def mib(n: float) -> str:
    return "%.2f MiB" % (n / 2**20)


def import_syncer():
    """wsync.WeightSyncer, or a ProbeFailure (the submission's fault, not the probe's)."""
    from probegate_probe import ProbeFailure

    try:
        from wsync import WeightSyncer
    except ImportError as exc:
        raise ProbeFailure("`from wsync import WeightSyncer` failed: %s" % exc) from None
    return WeightSyncer


def run_all_ranks(fn, timeout):
    """(per-rank results, None), or (None, the RankError) for every check of the probe to report."""
    from probegate_probe import RankError, run_ranks

    try:
        return run_ranks(fn, timeout=timeout), None
    except RankError as exc:
        return None, exc


def syncer_location(attr="sync"):
    """Where WeightSyncer (or one of its methods) is in the submission; None when it cannot be imported."""
    from probegate_probe import locate

    try:
        import wsync

        obj = wsync.WeightSyncer
        return locate(getattr(obj, attr) if attr else obj) or locate(obj)
    except Exception:
        return None
