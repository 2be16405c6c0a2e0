"""Shared helpers of the verl-safe-masked-mean probes: drawn cases (values with non-finite numbers at
masked-out positions, masks of every dtype) and the expected results, computed in float64 by the probe
itself before the submission is imported (the submission runs in the probe's process and could patch
torch afterwards)."""
# PROBEGATE-CANARY-MASKED-7c41e0b9
import importlib
import math

import torch

from probegate_probe import ProbeFailure, locate, param, rng

BAD = {"nan": float("nan"), "+inf": float("inf"), "-inf": float("-inf")}
MASK_DTYPES = {"bool": torch.bool, "int64": torch.int64, "float32": torch.float32}


def shape_2d():
    """(rows, columns) drawn per evaluation: a batch of responses of some length."""
    return param("rows", 6), param("cols", 37)


def random_mask(g, shape, kind, keep=0.6, weighted=False):
    """A 0/1 mask of `kind` (bool, int64, float32), at least one position selected per row; with
    `weighted`, the selected positions of a float mask get weights in (0.1, 1]."""
    sel = torch.rand(shape, generator=g) < keep
    sel.view(-1, shape[-1])[:, 0] = True
    if kind == "bool":
        return sel
    m = sel.to(MASK_DTYPES[kind])
    if weighted:
        m = m * (0.1 + 0.9 * torch.rand(shape, generator=g))
    return m


def dirty_copy(clean, mask, bad, g):
    """`clean` with every masked-out position replaced by `bad` ("nan", "+inf", "-inf" or "mixed")."""
    out = clean.clone()
    outside = ~mask.bool()
    if bad == "mixed":
        pick = torch.randint(0, 3, clean.shape, generator=g)
        fill = torch.tensor([float("nan"), float("inf"), float("-inf")], dtype=clean.dtype)[pick]
        out[outside] = fill[outside]
    else:
        out[outside] = BAD[bad]
    return out


def expect_sum(values, mask, axis):
    """Σ values·mask over axis, in float64, from finite values."""
    v, m = values.double(), mask.double()
    return (v * m).sum() if axis is None else (v * m).sum(axis)


def expect_mean(values, mask, axis):
    m = mask.double()
    return expect_sum(values, mask, axis) / ((m.sum() if axis is None else m.sum(axis)) + 1e-8)


def tolerance(dtype, n):
    """(rtol, atol) for a reduction of n values of dtype against the float64 result. float64 gets the
    float32 bounds on purpose: precision is the dtype requirement's business, not this one's."""
    if dtype in (torch.float16, torch.bfloat16):
        return 3e-2, 3e-2 * math.sqrt(n)
    return 1e-5, 1e-5 * math.sqrt(n)


def axis_name(axis):
    return "axis=None" if axis is None else "axis=%r" % (axis,)


def import_tf():
    """verl.utils.torch_functional of the submission."""
    return importlib.import_module("verl.utils.torch_functional")


def compare(got, want, what, dtype, n, location=None):
    """ProbeFailure unless `got` is a tensor of want's shape, non-finite exactly where `want` is, and
    close to it elsewhere."""
    if not isinstance(got, torch.Tensor):
        raise ProbeFailure("%s returned %s, expected a tensor" % (what, type(got).__name__), location=location)
    if tuple(got.shape) != tuple(want.shape):
        raise ProbeFailure("%s has shape %s, expected %s (as Tensor.sum over the same axis)" % (what, tuple(got.shape), tuple(want.shape)), location=location)
    g = got.detach().double()
    bad = torch.isnan(g) != torch.isnan(want)
    bad |= torch.isinf(g) != torch.isinf(want)
    both_inf = torch.isinf(g) & torch.isinf(want)
    bad |= both_inf & (torch.sign(g) != torch.sign(want))
    fin = torch.isfinite(g) & torch.isfinite(want)
    rtol, atol = tolerance(dtype, n)
    bad |= fin & ((g - want).abs() > atol + rtol * want.abs())
    if bad.any():
        i = int(bad.reshape(-1).nonzero()[0])
        gv, wv = float(g.reshape(-1)[i]), float(want.reshape(-1)[i])
        where = "" if got.dim() == 0 else " at flat index %d" % i
        raise ProbeFailure("%s gives %r%s, expected %r" % (what, gv, where, wv), location=location,
                           measured={"got": gv, "expected": wv, "mismatches": int(bad.sum())})


def where_is(tf, name):
    """The location of tf.<name> in the submission, if it has one."""
    fn = getattr(tf, name, None)
    return locate(fn) if fn is not None else None


def generator(salt):
    """A torch generator seeded from the evaluation's seed and a salt."""
    g = torch.Generator()
    g.manual_seed(rng(salt).randrange(2**31))
    return g
