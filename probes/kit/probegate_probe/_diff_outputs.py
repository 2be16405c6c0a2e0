"""Head against base, outputs (differential.py's `check_outputs`): two ranks' return values compared
bitwise (atol = rtol = 0) or within a tolerance, recursively, and the first difference said with its path.

One rule for every number, wherever it sits (a tensor, a numpy array, a plain or numpy float): NaN
equals NaN in the same place, infinities equal only the same infinity (never the largest finite
float), -0.0 equals 0.0, and a tolerance is `|head − base| ≤ atol + rtol × |base|` (torch.allclose's).
Integers, bools, strings and None are compared exactly."""
from __future__ import annotations

import math


def _np():
    try:
        import numpy
    except ImportError:  # no numpy in the environment: nothing can be an array
        return None
    return numpy


def _is_array(x, np) -> bool:
    return np is not None and isinstance(x, np.ndarray)


def _is_float(x, np) -> bool:
    return isinstance(x, float) or (np is not None and isinstance(x, np.floating))


def _tensor_difference(b, h, atol, rtol, torch):
    """None when the two tensors (same shape and dtype) are equal under the rule above, else what differs."""
    if b.is_complex():
        b, h = torch.view_as_real(b), torch.view_as_real(h)
    if not b.is_floating_point() and atol == rtol == 0:  # exactly, not through float64 (an int64 past 2**53)
        if torch.equal(b, h):
            return None
        return f"max |difference| {(b.double() - h.double()).abs().max().item():.3g}"
    b, h = b.double(), h.double()
    bn, hn = b.isnan(), h.isnan()
    if not torch.equal(bn, hn):
        return f"NaN in other places (head {int(hn.sum())}, base {int(bn.sum())})"
    b, h = b.masked_fill(bn, 0.0), h.masked_fill(hn, 0.0)
    equal = b == h  # an infinity equals only itself; -0.0 == 0.0
    if atol == rtol == 0:
        close = equal
    else:
        close = equal | ((h - b).abs() <= atol + rtol * b.abs())
    if bool(close.all()):
        return None
    diff = (h - b).abs().masked_fill(equal, 0.0)
    return f"max |difference| {diff.max().item():.3g}"


def _float_difference(b, h, atol, rtol):
    b, h = float(b), float(h)
    if math.isnan(b) or math.isnan(h):
        return None if math.isnan(b) and math.isnan(h) else f"{h!r}, base {b!r}"
    if b == h or (not (atol == rtol == 0) and abs(h - b) <= atol + rtol * abs(b)):
        return None
    return f"{h!r}, base {b!r}"


def differ(b, h, atol, rtol, torch, path="outputs"):
    """What differs between base's `b` and head's `h` first (with its path from `outputs`), or None."""
    np = _np()
    if isinstance(b, torch.Tensor) or isinstance(h, torch.Tensor) or _is_array(b, np) or _is_array(h, np):
        if type(b) is not type(h) and not (isinstance(b, torch.Tensor) and isinstance(h, torch.Tensor)):
            return f"{path}: {type(b).__name__} against {type(h).__name__}"
        if b.shape != h.shape or b.dtype != h.dtype:
            return f"{path}: shape/dtype {tuple(h.shape)}/{h.dtype}, base {tuple(b.shape)}/{b.dtype}"
        if _is_array(b, np):
            if b.dtype.kind not in "biufc":  # objects, strings: item by item
                return differ(b.tolist(), h.tolist(), atol, rtol, torch, path)
            try:
                b, h = torch.from_numpy(np.ascontiguousarray(b)), torch.from_numpy(np.ascontiguousarray(h))
            except TypeError:  # a dtype torch has no tensor for (uint32 on older torch): item by item
                return differ(b.tolist(), h.tolist(), atol, rtol, torch, path)
        problem = _tensor_difference(b.detach(), h.detach(), atol, rtol, torch)
        return f"{path}: {problem}" if problem else None
    if isinstance(b, dict) and isinstance(h, dict):
        if set(b) != set(h):
            return f"{path}: keys {sorted(map(str, h))}, base {sorted(map(str, b))}"
        return next((p for k in b if (p := differ(b[k], h[k], atol, rtol, torch, f"{path}[{k!r}]"))), None)
    if isinstance(b, (list, tuple)) and isinstance(h, (list, tuple)):
        if len(b) != len(h):
            return f"{path}: {len(h)} items, base {len(b)}"
        return next((p for i, (x, y) in enumerate(zip(b, h)) if (p := differ(x, y, atol, rtol, torch, f"{path}[{i}]"))), None)
    if _is_float(b, np) and _is_float(h, np):
        problem = _float_difference(b, h, atol, rtol)
        return f"{path}: {problem}" if problem else None
    try:
        same = bool(b == h)
    except Exception:  # an object whose == is not a truth value
        same = repr(b) == repr(h)
    return None if same else f"{path}: {h!r}, base {b!r}"
