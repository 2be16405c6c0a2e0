"""Bitwise comparison of nested state (state dicts, optimizer state, outputs)."""
from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from .emit import ProbeFailure

_INT_VIEW = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
             torch.float64: torch.int64}


def _key(k) -> str:
    return f"[{k!r}]" if not isinstance(k, str) or not k.isidentifier() else f".{k}"


def _tensor_diff(path, a: torch.Tensor, b: torch.Tensor):
    if a.dtype != b.dtype:
        return f"{path}: dtype {a.dtype} vs {b.dtype}"
    if tuple(a.shape) != tuple(b.shape):
        return f"{path}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
    if a.is_sparse or b.is_sparse:
        a, b = a.to_dense(), b.to_dense()
    a = a.detach().cpu().contiguous()
    b = b.detach().cpu().contiguous()
    if a.is_complex():
        return _tensor_diff(path, torch.view_as_real(a), torch.view_as_real(b))
    if a.numel() == 0:
        return None
    if a.dtype in _INT_VIEW:
        # Bitwise: a flipped bit in a float shows even where == would call values equal (±0.0).
        same = a.view(_INT_VIEW[a.dtype]) == b.view(_INT_VIEW[a.dtype])
        same |= torch.isnan(a) & torch.isnan(b)
    elif a.is_floating_point():  # float8 and friends: compare values, NaN-aware
        fa, fb = a.float(), b.float()
        same = (fa == fb) | (torch.isnan(fa) & torch.isnan(fb))
    else:
        same = a == b
    if bool(same.all()):
        return None
    bad = (~same).reshape(-1).nonzero()
    first = int(bad[0])
    index, rest = [], first
    for dim in reversed(a.shape):
        index.append(rest % dim)
        rest //= dim
    index.reverse()
    fa, fb = a.reshape(-1).double(), b.reshape(-1).double()
    diff = (fa - fb).abs()[~same.reshape(-1)]
    diff = diff[~torch.isnan(diff)]
    max_abs = float(diff.max()) if diff.numel() else float("nan")
    return (f"{path}: {bad.numel()} of {a.numel()} elements differ; first at index {index} "
            f"({fa[first].item()!r} vs {fb[first].item()!r}); max abs diff {max_abs:.6g}")


def _number_diff(path, a, b):
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} {a!r} vs {type(b).__name__} {b!r}"
    if isinstance(a, float):
        if math.isnan(a) and math.isnan(b):
            return None
        if a != b or math.copysign(1.0, a) != math.copysign(1.0, b):
            return f"{path}: {a!r} vs {b!r} (abs diff {abs(a - b):.6g})"
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def _diff(a, b, path):
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return f"{path}: {type(a).__name__} vs {type(b).__name__}"
        return _tensor_diff(path, a, b)
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        if not (isinstance(a, Mapping) and isinstance(b, Mapping)):
            return f"{path}: {type(a).__name__} vs {type(b).__name__}"
        missing = [k for k in a if k not in b]
        extra = [k for k in b if k not in a]
        if missing or extra:
            parts = []
            if missing:
                parts.append("missing in second: " + ", ".join(path + _key(k) for k in missing[:10]))
            if extra:
                parts.append("only in second: " + ", ".join(path + _key(k) for k in extra[:10]))
            return f"{path}: keys differ ({'; '.join(parts)})"
        for k in a:
            found = _diff(a[k], b[k], path + _key(k))
            if found:
                return found
        return None
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        if type(a) is not type(b):
            return f"{path}: {type(a).__name__} vs {type(b).__name__}"
        if len(a) != len(b):
            return f"{path}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            found = _diff(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(a, (bool, int, float)) or isinstance(b, (bool, int, float)):
        return _number_diff(path, a, b)
    if hasattr(a, "__array__") and hasattr(b, "__array__"):
        return _diff(torch.as_tensor(a), torch.as_tensor(b), path)
    try:
        equal = a == b
        equal = bool(equal)
    except Exception:
        equal = repr(a) == repr(b)
    return None if equal else f"{path}: {a!r:.100} vs {b!r:.100}"


def assert_state_equal(a, b, path: str = "state") -> None:
    """Raise ProbeFailure naming the first path where a and b differ (bitwise for tensors)."""
    found = _diff(a, b, path)
    if found:
        raise ProbeFailure(f"state differs at {found}")


def assert_optimizer_state_equal(opt_a_state_dict, opt_b_state_dict) -> None:
    """Optimizer state dicts: "state" parameter by parameter, then "param_groups", bitwise."""
    for name, sd in (("first", opt_a_state_dict), ("second", opt_b_state_dict)):
        if not isinstance(sd, Mapping) or "state" not in sd or "param_groups" not in sd:
            raise ProbeFailure(f"the {name} optimizer state dict lacks 'state'/'param_groups'")
    sa, sb = opt_a_state_dict["state"], opt_b_state_dict["state"]
    assert_state_equal(dict.fromkeys(sa), dict.fromkeys(sb), "optimizer.state")
    for k in sorted(sa, key=repr):
        assert_state_equal(sa[k], sb[k], f"optimizer.state[{k!r}]")
    assert_state_equal(opt_a_state_dict["param_groups"], opt_b_state_dict["param_groups"],
                       "optimizer.param_groups")
    rest_a = {k: v for k, v in opt_a_state_dict.items() if k not in ("state", "param_groups")}
    rest_b = {k: v for k, v in opt_b_state_dict.items() if k not in ("state", "param_groups")}
    assert_state_equal(rest_a, rest_b, "optimizer")
