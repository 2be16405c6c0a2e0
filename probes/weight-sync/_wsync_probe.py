"""Shared helpers of the weight-sync probes: probe models drawn from the evaluation's parameters,
bitwise comparison, and the bucket counts the prompt's "in-order greedy packing" allows.

Probe models are built here, not from the submission's PolicyNet, so expectations never depend on
code the submission could change. Everything a probe asks of the submission goes through the
interface the prompt states: `WeightSyncer(model, bucket_bytes=, src=)`, `sync(version)`,
`.version`, `.buckets` (names as in `model.named_parameters()`)."""
import math
import random
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

# (shape, dtype) or (shape, dtype, flags); flags: "t" stores the parameter transposed
# (non-contiguous), "frozen" sets requires_grad=False.
Spec = Tuple

_INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_equal = torch.equal  # bound before any submission code runs in this process
DTYPES = {"float16": torch.float16, "float64": torch.float64, "float32": torch.float32}


def _flags(spec) -> str:
    return spec[2] if len(spec) > 2 else ""


class ProbeModel(nn.Module):
    """Parameters of the given shapes/dtypes, named `blocks.<i>.weight` in spec order.

    `extras` adds what real modules carry besides plain parameters: a buffer (`blocks.0.stat`) and
    a tied alias of the first parameter (`tied`, as with shared embeddings). Neither is a distinct
    parameter, so neither may appear in a bucket plan."""

    def __init__(self, specs: Sequence[Spec], device=None, extras: bool = False):
        super().__init__()
        self.blocks = nn.ModuleList()
        for spec in specs:
            shape, dtype, flags = spec[0], spec[1], _flags(spec)
            holder = nn.Module()
            if "t" in flags:
                data = torch.empty(tuple(reversed(shape)), dtype=dtype, device=device).t()
            else:
                data = torch.empty(shape, dtype=dtype, device=device)
            holder.weight = nn.Parameter(data, requires_grad="frozen" not in flags)
            self.blocks.append(holder)
        if extras and len(self.blocks):
            self.blocks[0].register_buffer("stat", torch.zeros(3, device=device))
            self.tied = self.blocks[0]


def values(specs: Sequence[Spec], seed: int) -> List[torch.Tensor]:
    """Expected weights, drawn on the CPU before any submission code runs."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(spec[0], generator=g).to(spec[1]) for spec in specs]


@torch.no_grad()
def build(specs: Sequence[Spec], seed: int, device, extras: bool = False) -> ProbeModel:
    """A model with seeded random weights, drawn in place so no temporaries linger on the heap."""
    model = ProbeModel(specs, device=device, extras=extras)
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
    for spec in specs:
        total += math.prod(spec[0]) * torch.empty((), dtype=spec[1]).element_size()
    return total


def greedy_bucket_counts(specs: Sequence[Spec], bucket_bytes: int) -> Dict[str, int]:
    """Bucket counts of the simple in-order greedy packings the prompt's wording admits.

    "mixed": one open bucket, any dtypes together (byte buffers); "per_dtype": one open bucket per
    dtype (homogeneous buckets, the dtypes' streams interleaved); "contiguous": homogeneous, a
    dtype change closes the bucket. A plan is judged against the largest of these."""
    counts = {}
    for mode in ("mixed", "per_dtype", "contiguous"):
        open_bytes: Dict = {}
        last_dtype, count = None, 0
        for spec in specs:
            size, dtype = nbytes([spec]), spec[1]
            key = None if mode == "mixed" else dtype
            if mode == "contiguous" and dtype != last_dtype:
                open_bytes = {}
            if key not in open_bytes or open_bytes[key] + size > bucket_bytes:
                count += 1
                open_bytes[key] = 0
            open_bytes[key] += size
            last_dtype = dtype
        counts[mode] = count
    return counts


def shape_of(numel: int, r: random.Random) -> Tuple[int, ...]:
    """A 1-D or 2-D shape of about `numel` elements (odd sizes included)."""
    if numel < 8 or r.random() < 0.4:
        return (numel,)
    rows = r.randint(2, min(40, numel // 2))
    return (rows, max(1, numel // rows))


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


def run_all_ranks(fn, timeout, world_size=None, backend=None, args=()):
    """(per-rank results, None), or (None, the RankError) for every check of the probe to report."""
    from probegate_probe import RankError, run_ranks

    try:
        return run_ranks(fn, world_size=world_size, backend=backend, args=args, timeout=timeout), None
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
