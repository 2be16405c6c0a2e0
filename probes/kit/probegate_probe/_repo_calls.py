"""Behaviour by record and replay (issue #39): the calls a gate's tests make into the gated modules, recorded
at the base and replayed on the head.

During the first metered session of each side, every public module-level function of the gated modules is
wrapped (the module attribute, and each reference a module of the tree took with `from m import f`). The
outermost call, up to CALLS_PER_FUNCTION per function, is recorded when its arguments and result are plain
data (tensors on the CPU, numbers, strings, bytes, None, and lists, tuples and dicts of them). The tests'
process is differential's rank of a world of 1, and so is the replay's: a call on the default group
replays in the context it was recorded in. Calls inside the ranks a test spawns are not recorded (their
group is gone). The record travels back as the side's return value, never as a file the head could
rewrite: only the base's is kept.

Then both trees replay the base's calls, each in a fresh interpreter of its own (`replay_tree`), base
first: the same arguments into its own function. Per function, `test-calls.<module.function>` (functional):
- a call whose base replay differs from what the base returned in its test (randomness, state left by
  earlier calls, the time) cannot judge the head: it is left out, and said so when none is left;
- a call whose head replay differs from the base's replay (the result, the arguments it changed in
  place, an exception, the function gone) fails, naming the function, the test that made the call and
  both results. `atol`/`rtol` (CHECKS["calls"]) loosen the comparison of floating tensors and floats.
What the head's process says of its own replay is the head's word, as its own test's assertions are.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import os
import sys

from . import _gate_tree
from ._diff_outputs import differ
from .emit import emit, slug_id

CALLS_PER_FUNCTION = 3
TRIES_PER_FUNCTION = 8  # calls with arguments that are not plain data, after which a function is no longer looked at
CALL_BYTES = 4 << 20  # tensor bytes of one call's arguments and result, at most
RECORD_BYTES = 64 << 20  # of the whole record
_NOT_PLAIN = object()


def _copy(value, budget, depth=0):
    """A deep copy of plain data, or _NOT_PLAIN; budget[0]: tensor bytes still allowed."""
    import torch

    if depth > 8:
        return _NOT_PLAIN
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    if type(value) in (torch.Tensor, torch.nn.Parameter):
        if value.device.type != "cpu" or value.is_sparse:
            return _NOT_PLAIN
        budget[0] -= value.numel() * value.element_size()
        return _NOT_PLAIN if budget[0] < 0 else value.detach().clone()
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        out = [_copy(v, budget, depth + 1) for v in value]
        return _NOT_PLAIN if any(v is _NOT_PLAIN for v in out) else type(value)(out)
    if type(value) is dict and all(isinstance(k, (str, int)) for k in value):
        out = {k: _copy(v, budget, depth + 1) for k, v in value.items()}
        return _NOT_PLAIN if any(v is _NOT_PLAIN for v in out.values()) else out
    return _NOT_PLAIN


class Recorder:
    """Wraps the gated modules' public functions in this process and records their plain calls."""

    def __init__(self, tree, gated):
        self.tree, self.gated = os.path.realpath(tree), list(gated)
        self.calls, self.test, self._count, self._busy, self._done, self._left = [], None, {}, False, set(), [RECORD_BYTES]
        self._wrappers, self._tries = {}, {}  # id(original) -> wrapper; key -> calls that were not plain
        self.active = True  # False once its session is over: the wrappers stay, recording nothing more

    def _rel(self, mod):
        f = getattr(mod, "__file__", None)
        if not f:
            return None
        rel = os.path.relpath(os.path.realpath(f), self.tree)
        return None if rel.startswith("..") else rel.replace(os.sep, "/")

    def preload(self):
        """Imports the gated modules now (as the tests would), so calls from a test that imports them in its
        body are recorded too: each file under the first name it imports by whose __file__ is that file."""
        for rel in sorted(_gate_tree.files(self.tree)):
            if not rel.endswith(".py") or not _gate_tree.matches(self.gated, rel) or _gate_tree.TEST_FILE.search(rel):
                continue
            parts = rel[:-3].split("/")
            if parts[-1] == "__init__":
                parts.pop()
            for i in range(len(parts)):
                try:
                    mod = importlib.import_module(".".join(parts[i:]))
                except Exception:  # noqa: BLE001 - not importable under this name (or at all): the tests decide
                    continue
                if self._rel(mod) == rel:
                    break
        self.scan()

    def paths(self):
        """The folders of the tree on sys.path now (pytest's rootdir and `pythonpath` insertions), relative."""
        out = []
        for p in sys.path:
            rel = os.path.relpath(os.path.realpath(p or "."), self.tree)
            if not rel.startswith("..") and rel not in out:
                out.append(rel)
        return out

    def scan(self):
        """Wraps what newly imported gated modules define; points the tree's references at the wrappers."""
        tree_modules = [(n, m) for n, m in list(sys.modules.items()) if m is not None and self._rel(m)]
        for name, mod in tree_modules:
            rel = self._rel(mod)
            if name in self._done or not _gate_tree.matches(self.gated, rel) or _gate_tree.TEST_FILE.search(rel):
                continue
            self._done.add(name)
            for attr, fn in list(vars(mod).items()):
                if not attr.startswith("_") and inspect.isfunction(fn) and fn.__module__ == name and id(fn) not in self._wrappers:
                    self._wrappers[id(fn)] = self._wrap(name, attr, fn)
        for _, mod in tree_modules:
            for attr, value in list(vars(mod).items()):
                w = self._wrappers.get(id(value))
                if w is not None and w.__wrapped__ is value:
                    setattr(mod, attr, w)

    def _wrap(self, module, name, fn):
        key = f"{module}:{name}"

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if self._busy or not self.active or self._count.get(key, 0) >= CALLS_PER_FUNCTION or self._tries.get(key, 0) >= TRIES_PER_FUNCTION:
                return fn(*args, **kwargs)
            budget = [min(CALL_BYTES, self._left[0])]
            before = _copy((list(args), kwargs), budget)
            if before is _NOT_PLAIN:  # a hot function called with objects costs a copy attempt only a few times
                self._tries[key] = self._tries.get(key, 0) + 1
                return fn(*args, **kwargs)
            self._busy = True
            try:
                result = fn(*args, **kwargs)
            finally:
                self._busy = False
            res, after = _copy(result, budget), _copy((list(args), kwargs), budget)
            if res is not _NOT_PLAIN and after is not _NOT_PLAIN:
                self._left[0] -= min(CALL_BYTES, self._left[0]) - budget[0]
                self._count[key] = self._count.get(key, 0) + 1
                self.calls.append({"module": module, "name": name, "test": self.test, "args": before, "result": res, "after": after})
            else:
                self._tries[key] = self._tries.get(key, 0) + 1
            return result

        return wrapper


def replay_tree(tree, calls, paths, timeout=600):
    """The outcomes of replaying `calls` in `tree`: a fresh interpreter of its own (no process group, no guard
    to keep, nothing of the engine's: a call that ends its process, or tears down a group, harms no run), the
    tree first on its path. A process that dies gives every call the outcome "missing"."""
    import subprocess
    import tempfile

    import torch

    kit = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROBEGATE_")}
    env["PYTHONPATH"] = os.pathsep.join([tree, kit] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    with tempfile.TemporaryDirectory(prefix="probegate-replay-") as tmp:
        src, dst = os.path.join(tmp, "calls.pt"), os.path.join(tmp, "outcomes.pt")
        torch.save({"calls": calls, "paths": list(paths)}, src)
        try:
            r = subprocess.run([sys.executable, "-m", "probegate_probe._repo_calls", src, dst], cwd=tree, env=env,
                               capture_output=True, text=True, timeout=timeout)
            why = None if r.returncode == 0 and os.path.exists(dst) else f"the replay process exited {r.returncode}: {(r.stderr or '').strip()[-300:]}"
        except subprocess.TimeoutExpired:
            why = f"the replay did not end within {timeout} s"
        if why is None:
            return torch.load(dst, weights_only=True)
    return [("missing", why)] * len(calls)


def replay(calls, paths=()):
    """One side's replay of the base's calls, in this side's tree (the cwd; `paths`: its folders that were on
    sys.path when they were recorded): per call ("returned", result, arguments after) or ("raised", text)
    or ("missing", text) or ("not plain", type)."""
    for rel in reversed(paths):
        full = os.path.normpath(os.path.join(os.getcwd(), rel))
        if full not in sys.path:
            sys.path.insert(0, full)
    out = []
    for c in calls:
        try:
            fn = getattr(importlib.import_module(c["module"]), c["name"], None)
        except Exception as exc:  # noqa: BLE001 - the head's module does not import: that is the finding
            out.append(("missing", f"{c['module']} does not import: {type(exc).__name__}: {str(exc)[:200]}"))
            continue
        if not callable(fn):
            out.append(("missing", f"{c['module']}.{c['name']} is gone"))
            continue
        args, kwargs = _copy(c["args"], [1 << 62])
        try:
            result = fn(*args, **kwargs)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - an outcome: both sides must raise alike
            out.append(("raised", f"{type(exc).__name__}: {str(exc)[:300]}"))
            continue
        budget = [1 << 62]
        res, after = _copy(result, budget), _copy((args, kwargs), budget)
        out.append(("returned", res, after) if res is not _NOT_PLAIN and after is not _NOT_PLAIN else ("not plain", type(result).__name__))
    return out


def _equal(base, head, atol, rtol):
    """check_outputs' rule (`_diff_outputs.differ`): bitwise, NaN in the same places, or within atol/rtol."""
    import torch

    return differ(base, head, atol, rtol, torch) is None


def _show(v, limit=120):
    import torch

    if isinstance(v, torch.Tensor):
        flat = v.flatten()[:4].tolist()
        return f"tensor{tuple(v.shape)} {str(v.dtype).replace('torch.', '')} [{', '.join(f'{x:.6g}' if isinstance(x, float) else str(x) for x in flat)}{', …' if v.numel() > 4 else ''}]"
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_show(x, 40) for x in v[:3]) + (", …" if len(v) > 3 else "")
        text = f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    else:
        text = repr(v)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _outcome(o):
    if o[0] == "returned":
        return f"returned {_show(o[1])}"
    return f"{o[0]}: {o[1]}"


def check_calls(calls, base, head, tolerances=None, requirements=None):
    """One `test-calls.<module.function>` check per recorded function: the head's replay against the base's."""
    tol = tolerances or {}
    atol, rtol = float(tol.get("atol", 0.0)), float(tol.get("rtol", 0.0))
    by_fn = {}
    for i, c in enumerate(calls):
        by_fn.setdefault(f"{c['module']}.{c['name']}", []).append(i)
    for fn, idx in by_fn.items():
        cid = slug_id("test-calls", fn, always=True)
        judged, left_out, failed = 0, 0, None
        for i in idx:
            c, b, h = calls[i], base[i], head[i]
            if b[0] != "returned" or not _equal(c["result"], b[1], 0.0, 0.0) or not _equal(c["after"], b[2], 0.0, 0.0):
                left_out += 1  # the base does not give what it gave in its test: the call depends on more than its arguments
                continue
            judged += 1
            same = h[0] == "returned" and _equal(b[1], h[1], atol, rtol)
            if same and not _equal(b[2], h[2], atol, rtol):
                failed = failed or (c, f"changed its arguments in place to {_show(h[2][0])} where base's left {_show(b[2][0])}")
            elif not same:
                failed = failed or (c, f"{_outcome(h)} where base's {_outcome(b)}")
        measured = {"recorded_calls": len(idx), "judged_calls": judged, "left_out_calls": left_out, "atol": atol, "rtol": rtol}
        if failed:
            c, why = failed
            emit(cid, "functional", "failed", f"head's {fn}({_show(c['args'][0], 80)[1:-1]}) {why} (a call recorded at the base in {c['test']}, replayed on both trees)",
                 None, measured, requirements)
        elif judged:
            emit(cid, "functional", "passed", f"{judged} call{'s' if judged != 1 else ''} of {fn} recorded at the base, replayed on the head: the base's results"
                 + (f" ({left_out} left out: the base's replay differed from its own record)" if left_out else ""), None, measured, requirements)
        else:
            emit(cid, "functional", "skipped", f"none of the {left_out} recorded call{'s' if left_out != 1 else ''} of {fn} gives the base's own result again when replayed "
                 "alone (it depends on more than its arguments): nothing to judge the head by", None, measured, requirements)


if __name__ == "__main__":  # replay_tree's interpreter: python -m probegate_probe._repo_calls <calls.pt> <outcomes.pt>
    import torch

    _given = torch.load(sys.argv[1], weights_only=True)
    sys.path.insert(0, os.getcwd())
    torch.save(replay(_given["calls"], _given["paths"]), sys.argv[2])
