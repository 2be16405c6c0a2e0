"""Structure checks: a name exists, is callable and takes the parameters the prompt states."""
from __future__ import annotations

import inspect

from .emit import ProbeFailure
from .location import locate


def _owner_name(obj) -> str:
    return getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__


def _param_names(owner, name, attr):
    sig = inspect.signature(attr)
    names = [p.name for p in sig.parameters.values()]
    if inspect.isclass(owner):
        raw = inspect.getattr_static(owner, name, None)
        # A plain function looked up on a class still lists self.
        if inspect.isfunction(raw) and names and names[0] == "self":
            names = names[1:]
    return names, sig


def require_signature(obj, name: str, params):
    """getattr(obj, name), or ProbeFailure when it is missing, not callable, or its parameter
    names (self excluded) do not start with `params`, in that order."""
    where = f"{_owner_name(obj)}.{name}"
    attr = getattr(obj, name, None)
    if attr is None:
        present = sorted(n for n in dir(obj) if not n.startswith("_"))[:20]
        raise ProbeFailure(f"{where} is missing (expected a callable taking ({', '.join(params)}, ...)); "
                           f"found: {', '.join(present) or 'nothing public'}", location=locate(obj))
    if not callable(attr):
        raise ProbeFailure(f"{where} is a {type(attr).__name__}, expected a callable taking "
                           f"({', '.join(params)}, ...)", location=locate(obj))
    try:
        names, sig = _param_names(obj, name, attr)
    except (TypeError, ValueError):
        raise ProbeFailure(f"{where} has no inspectable signature; expected ({', '.join(params)}, ...)",
                           location=locate(attr) or locate(obj))
    params = list(params)
    if names[: len(params)] != params:
        raise ProbeFailure(f"{where} takes {name}{sig}, expected parameters starting with "
                           f"({', '.join(params)})", location=locate(attr) or locate(obj))
    return attr
