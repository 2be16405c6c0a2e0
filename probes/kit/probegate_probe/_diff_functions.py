"""Head against base, time where the change is (differential.py's `functions=` and
`check_function_times`): the wall time spent inside each named function, per repetition, beside the
scenario's whole time. A 1.4× slower hot function inside a scenario that does much else moves the
whole scenario's ratio by little; its own ratio shows it.

A function is named `path/in/tree.py:qualname` (`verl/trainer/ppo/core_algos.py:agg_loss`,
`pkg/mod.py:Class.method`). In the time run each rank imports that module from its own tree and
replaces the function, where the module holds it (its attribute, and any module-level dict or list
that holds the same object: the registries `@register(...)` decorators fill), by a timer around the
original. Only the outermost call is timed (a recursive or re-entrant call is inside it). A caller
that kept its own reference before the rank started (another module's `from x import f` at import
time) calls the original: such calls are not counted, never counted twice.

`changed_functions(base, head, files)` reads both trees (never imports them) and names the functions
whose source differs: the PR's own, for the probe to time beside the subsystem's hot ones.
"""
from __future__ import annotations

import ast
import functools
import importlib
import os
import statistics
import time

from .emit import emit, slug_id

# A function's median must grow by at least this much a repetition to fail. 1 ms failed an unchanged cheap
# function (verl's compute_rewards) beside a mutant that kept copies in the function before it: a few ms of a
# cheap function are the allocator's and the runner's, not the code's (bench/RESULTS.md, "Gate power on mutants").
MIN_EXTRA_S = 5e-3


def _module_name(rel: str) -> str:
    return rel[:-3].replace(os.sep, ".").replace("/", ".").removesuffix(".__init__")


def _defs(path):
    """qualname -> source segment of each function and method of a file (None when the file is absent)."""
    try:
        with open(path) as fh:
            text = fh.read()
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError):
        return None
    out = {}

    def visit(body, owner):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[f"{owner}{node.name}"] = ast.get_source_segment(text, node)
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{owner}{node.name}.")

    visit(tree.body, "")
    return out


def changed_functions(base, head, files):
    """`file:qualname` of every function both trees define in `files` whose source differs (the head's change)."""
    names = []
    for rel in files:
        b, h = _defs(os.path.join(base, rel)), _defs(os.path.join(head, rel))
        if b is None or h is None:
            continue
        names += [f"{rel}:{q}" for q in sorted(set(b) & set(h)) if b[q] != h[q]]
    return names


class FunctionTimers:
    """Timers around the named functions of the tree this rank imported; `take()` returns and resets the totals."""

    def __init__(self, names):
        self.totals = {}
        self.cpu = {}  # process CPU time (every thread's) inside each function: waiting for a CPU adds none
        self.missing = []
        self._depth = {}
        for name in names:
            rel, _, qual = name.partition(":")
            try:
                owner = importlib.import_module(_module_name(rel))
            except Exception:  # noqa: BLE001 - a tree without that module: the function is missing on this side
                self.missing.append(name)
                continue
            module, *parts = [owner, *qual.split(".")]
            for part in parts[:-1]:
                owner = getattr(owner, part, None)
            fn = getattr(owner, parts[-1], None) if owner is not None else None
            if not callable(fn):
                self.missing.append(name)
                continue
            timed = self._wrap(name, fn)
            setattr(owner, parts[-1], timed)
            for value in vars(module).values():  # registries filled by decorators at import
                if isinstance(value, dict):
                    for k, v in list(value.items()):
                        if v is fn:
                            value[k] = timed
                elif isinstance(value, list):
                    value[:] = [timed if v is fn else v for v in value]
            self.totals[name] = 0.0
            self.cpu[name] = 0.0

    def _wrap(self, name, fn):
        self._depth[name] = 0

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            if self._depth[name]:
                return fn(*args, **kwargs)
            self._depth[name] += 1
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.totals[name] += time.perf_counter() - t0
                self.cpu[name] += time.process_time() - c0
                self._depth[name] -= 1

        return timed

    def take(self):
        """{name: wall seconds}, and {"cpu:" + name: CPU seconds}, since the last take; resets both."""
        # On CUDA the CPU time includes spinning on synchronisation: wall time alone judges there.
        out = {**self.totals, **({} if _cuda() else {f"cpu:{k}": v for k, v in self.cpu.items()})}
        for k in self.totals:
            self.totals[k] = self.cpu[k] = 0.0
        return out


def slowest_per_function(rounds):
    """name -> time of record per repetition (the slowest rank's), over the rounds of one side."""
    out = {}
    for ranks in rounds:
        for reps in zip(*(r.get("functions") or [] for r in ranks)):  # one repetition, every rank
            for name in set().union(*reps):
                out.setdefault(name, []).append(max(rep.get(name, 0.0) for rep in reps))
    return out


def function_check_id(id, name):
    """`<id>.<qualname>`; a qualname outside the check id pattern (`_Bucket.start_grad_sync`) is made to fit
    (emit.slug_id, with a hash of `path:qualname`)."""
    return slug_id(id, name.partition(":")[2], key=name)


def check_function_times(sides, id, margin=1.3, alpha=0.05, requirements=None, location=None, min_extra_s=MIN_EXTRA_S):
    """One check per timed function both sides define and call: `<id>.<qualname>` fails when the head's
    median time inside it is over `margin` × the base's, at least `min_extra_s` more, and the one-sided
    rank test agrees (p < alpha). A function only one side defines, or neither calls, is skipped, saying so."""
    from ._diff_time import mann_whitney_greater

    base, head = sides.function_times.get("base", {}), sides.function_times.get("head", {})
    for name in sorted((set(base) | set(head) | set(sides.functions)) - {k for k in set(base) | set(head) if k.startswith("cpu:")}):
        cid = function_check_id(id, name)
        where = location or {"path": name.partition(":")[0]}
        b, h = base.get(name), head.get(name)
        if not b or not h:
            side = "base" if not b else "head"
            emit(cid, "time", "skipped", f"{name} is not defined in the {side}'s tree (or its module does not import there): not timed", where, None, requirements)
            continue
        mb, mh = statistics.median(b), statistics.median(h)
        if mb == 0 and mh == 0:
            emit(cid, "time", "skipped", f"{name} was not called by the scenario on either side: not timed", where, None, requirements)
            continue
        ratio = mh / mb if mb > 0 else float("inf")
        p = mann_whitney_greater(h, b)
        measured = {"base_median_s": mb, "head_median_s": mh, "time_ratio": ratio, "rank_test_p": p, "margin": margin, "repetitions": len(h)}
        text = f"{name}: head spends {ratio:.2f}× the base's time inside it ({mh * 1e3:.2f} ms against {mb * 1e3:.2f} ms a repetition, median of {len(h)}; rank test p={p:.3f}; margin {margin}×)"
        measured["min_extra_s"] = min_extra_s
        failed = ratio > margin and mh - mb >= min_extra_s and p < alpha
        cb, ch = base.get(f"cpu:{name}"), head.get(f"cpu:{name}")
        if failed and cb and ch:
            # On CPU the wall ratio may come from a busy runner; CPU time does not grow by waiting. Contention still
            # adds CPU time (switches, evicted caches) to some calls, never takes any away: each side's least
            # repetition is its work (timing.py's time_ratio reads CPU time the same way). A head that does more
            # work does it in every repetition, its least one too.
            cpu = min(ch) / min(cb) if min(cb) > 0 else float("inf")
            measured["cpu_ratio"] = cpu
            if cpu <= margin:
                failed = False
                text += f"; its least CPU time a repetition is {cpu:.2f}× the base's, within the margin: the wall time waited for a busy runner"
        emit(cid, "time", "failed" if failed else "passed", text, where, measured, requirements)


def _cuda():
    """Whether this rank runs CUDA work."""
    import sys

    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized())
