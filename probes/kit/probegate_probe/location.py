"""Where things live: the workspace (the submission's tree) and source locations inside it."""
from __future__ import annotations

import functools
import inspect
import os
import pathlib
import sys
import types
from typing import Iterable, Optional, Sequence, Tuple

from . import _conf

_KIT_DIR = pathlib.Path(__file__).resolve().parent


def workspace() -> pathlib.Path:
    """The submission's tree: $PROBEGATE_WORKSPACE, else the current directory."""
    return pathlib.Path(_conf.get("PROBEGATE_WORKSPACE") or os.getcwd()).resolve()


def _excluded_roots() -> list:
    # Frames of the kit and of the probe itself are never "the submission", even when a manual
    # run uses a workspace (cwd) that happens to contain them.
    roots = [_KIT_DIR]
    probe_dir = _conf.get("PROBEGATE_PROBE_DIR")
    if probe_dir:
        roots.append(pathlib.Path(probe_dir).resolve())
    main_file = _conf.main_file() or getattr(sys.modules.get("__main__"), "__file__", None)
    if main_file and not main_file.endswith("__main__.py"):  # the probe script, not `python -m x`
        roots.append(pathlib.Path(main_file).resolve())
    return roots


@functools.lru_cache(maxsize=4096)
def _relative(filename: str, ws: str, excluded: Tuple[str, ...]) -> Optional[str]:
    if not filename or filename.startswith("<"):
        return None
    try:
        path = pathlib.Path(filename).resolve()
    except (OSError, RuntimeError):
        return None
    for root in excluded:
        if path == pathlib.Path(root) or pathlib.Path(root) in path.parents:
            return None
    if "site-packages" in path.parts or "dist-packages" in path.parts:
        return None
    try:
        rel = path.relative_to(ws)
    except ValueError:
        return None
    return rel.as_posix()


def relative_path(filename: str) -> Optional[str]:
    """filename relative to the workspace (posix), or None when it is not submission code."""
    return _relative(filename, str(workspace()), tuple(str(r) for r in _excluded_roots()))


def _source_object(obj):
    if isinstance(obj, (property,)):
        obj = obj.fget
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, functools.partial):
        obj = obj.func
    if isinstance(obj, types.MethodType):
        obj = obj.__func__
    try:
        obj = inspect.unwrap(obj)
    except ValueError:
        pass
    if not (inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isfunction(obj)
            or inspect.ismethod(obj) or inspect.iscode(obj) or inspect.isframe(obj)
            or inspect.istraceback(obj)):
        obj = type(obj)  # an instance: point at its class
    return obj


def locate(obj) -> Optional[dict]:
    """{"path", "line"} of a module/class/function/method defined in the submission, else None."""
    if obj is None:
        return None
    try:
        target = _source_object(obj)
        filename = inspect.getsourcefile(target) or inspect.getfile(target)
    except (TypeError, OSError):
        return None
    rel = relative_path(filename)
    if rel is None:
        return None
    line = 1
    try:
        _, start = inspect.getsourcelines(target)
        line = max(1, int(start))
    except (OSError, TypeError, IndexError):
        pass
    return {"path": rel, "line": line}


def frames_in_workspace(frames: Iterable[Sequence]) -> list:
    """The (path, line) of each frame that lies in the submission, outermost first."""
    found = []
    for frame in frames:
        rel = relative_path(frame[0])
        if rel is not None:
            found.append({"path": rel, "line": int(frame[1]) if frame[1] else 1})
    return found


def normalize_location(location) -> Optional[dict]:
    """A protocol location from a dict or from any object (then locate(obj))."""
    if location is None:
        return None
    if isinstance(location, dict):
        path = location.get("path")
        if not isinstance(path, str) or not path:
            raise ValueError(f"location needs a non-empty 'path', got {location!r}")
        if os.path.isabs(path):
            rel = relative_path(path)
            if rel is None:
                return None
            path = rel
        if path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"location path must be relative to the workspace, got {path!r}")
        out = {"path": path}
        line = location.get("line")
        if line is not None:
            if isinstance(line, bool) or not isinstance(line, int) or line < 1:
                raise ValueError(f"location line must be an int >= 1, got {line!r}")
            out["line"] = line
        return out
    return locate(location)
