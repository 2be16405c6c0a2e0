"""Count the bytes this rank moves through collectives (algorithmic bytes, PROBES.md).

Counting costs time (a Python callback per tensor op while active): never time and count in the
same pass.
"""
from __future__ import annotations

import os
from collections import defaultdict
from fractions import Fraction

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import _hidden, _sites, _wire
from ._pg_patches import _install_patches, _needs_patches, _remove_patches
from ._pg_state import _counters, _functional_group, _group_info, _sequence_numbers, _tls, _total_sequence

class _CountingMode(TorchDispatchMode):
    def __init__(self, counter):
        super().__init__()
        self.counter = counter
        self.rules = {}

    def _rule(self, func):
        rule = self.rules.get(func, False)
        if rule is False:
            rule = _wire.dispatch_rule(func._schema.name)
            self.rules[func] = rule
        return rule

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rule = self._rule(func)
        if rule is None:
            return func(*args, **kwargs)
        _tls.seen = True
        seq = _total_sequence()
        result = func(*args, **kwargs)  # a collective the backend refuses moves nothing
        self.counter._issued_seen(seq)
        try:
            self._count(rule, list(args) + list(kwargs.values()))
        except Exception as exc:  # counting must never break the submission's collective
            self.counter._uncounted(rule[1], exc)
        return result

    def _count(self, rule, flat):
        namespace, name = rule
        if namespace == "c10d":
            # The group is the first argument that is neither a tensor nor a plain value.
            pg = next((a for a in flat if a is not None and not isinstance(
                a, (torch.Tensor, list, tuple, int, float, str, bool))), None)
            size, rank = _group_info(pg)
            op, payload, wire = _wire.pg_bytes(name, flat, size, rank)
        else:
            size, rank = _functional_group(flat)
            op, payload, wire = _wire.functional_bytes(name, flat, size, rank)
        self.counter._add(op, payload, wire)


class CollectiveCounter:
    """Context manager counting this process's collective traffic while active.

    total_bytes / by_op: algorithmic wire bytes per rank (all_reduce 2(n-1)/n·S, all_gather,
    reduce_scatter and all_to_all (n-1)/n·S, broadcast/reduce/send/recv S, barrier 0); calls: wire
    ops per name (a coalesced op is one); payload_bytes: the sum of S. Counting costs time: never
    time and count in the same pass. Collectives issued on other threads are not counted: `hidden`
    says how many the process groups issued beyond those counted, `hidden_calls` describes those
    that went through a ProcessGroup method (op, bytes, group size, thread, file and line), and both
    end up in `uncounted`, which traffic probes report as an error. `sites`: calls and wire bytes per
    collective and call site (the innermost frame outside torch, the kit, the standard library and
    installed packages, preferring one under `root`, default the current folder): `_sites`.
    """

    def __init__(self, root=None):
        self.root = root  # where call sites are looked for first (the gated tree); None: the current folder at entry
        self._root = root
        self.sites = {}  # (op, file, line, function) -> [calls, wire bytes]: _sites, one tally per call site
        self._bytes = defaultdict(Fraction)
        self._calls = defaultdict(int)
        self._payload = 0
        self.events = []  # (op, payload S, wire bytes) in issue order, for messages
        self.uncounted = []  # "op: why" for collectives seen but not sized (a kit gap: report error)
        self.hidden = 0  # collectives issued in the window that the counter did not see (issue 29)
        self.hidden_calls = []  # what is known of them: {op, bytes, group_size, thread, how, file, line} (_hidden)
        self.hidden_note = ""  # the sentence about them in `uncounted` ("" when there were none)
        self._seq_seen = 0  # sequence numbers the counted calls themselves used (an op may use more than one)
        patched = _needs_patches()
        self.mode = "dispatch+pg-methods" if patched else "dispatch"
        self.note = _NOTE_113 if patched else _NOTE_DISPATCH

    def _add(self, op, payload, wire):
        self._bytes[op] += wire
        self._calls[op] += 1
        self._payload += int(payload)
        _sites.note(self.sites, op, wire, self._root)
        if len(self.events) < 10000:
            self.events.append((op, int(payload), int(round(wire))))

    def _issued_seen(self, before) -> None:
        after = _total_sequence() if before is not None else None
        if after is not None:
            self._seq_seen += max(0, after - before)

    def _uncounted(self, name, exc):
        if len(self.uncounted) < 100:
            self.uncounted.append(f"{name}: {type(exc).__name__}: {exc}")

    def __enter__(self):
        self._seq_before = _sequence_numbers()
        self._root = self.root or os.getcwd()
        _install_patches()
        self._mode_ctx = _CountingMode(self)
        self._mode_ctx.__enter__()
        _counters().append(self)
        _hidden.enter(self)
        return self

    def __exit__(self, *exc):
        try:
            self._mode_ctx.__exit__(*exc)
        finally:
            _hidden.leave(self)
            _counters().remove(self)
            _remove_patches()
            self._check_sequence()
        return False

    def _check_sequence(self) -> None:
        """Collectives the process groups issued (their sequence numbers) against those counted: more
        issued than seen were hidden from the counter — issued on another thread, with the dispatch
        mode disabled, or through a method bound before the counter — and are reported as uncounted."""
        after = _sequence_numbers()
        issued = 0
        for key, (group, seq) in after.items():
            base = self._seq_before.get(key)
            issued += seq - (base[1] if base is not None and base[0] is group else 0)
        # Sequence numbers used while a counted call ran are the counted calls' (gloo's reduce_scatter
        # on torch 2 uses two); the rest were issued where the counter did not look.
        seen = self._seq_seen
        hidden = max(issued - seen if after else 0, len(self.hidden_calls))
        if hidden <= 0:
            return
        self.hidden = hidden
        why = (f"the process groups' sequence numbers advanced by {issued}, {seen} of them inside counted calls (the rest "
               "were issued on another thread, with the dispatch mode disabled, or through a method bound before the "
               "counter)") if after else "no sequence numbers on this backend"
        self.hidden_note = f"{hidden} collective(s) not seen by the counter: {why}{self.hidden_detail()}"
        self.uncounted.append(self.hidden_note)

    def hidden_detail(self, root=None) -> str:
        """`; seen passing through Python: all_reduce of 256 B, group of 2, on thread …` ("" when none
        was): paths relative to `root`, else to the workspace."""
        if not self.hidden_calls:
            return ""
        if root is None:
            from .location import workspace

            root = workspace()
        shown = [_hidden.describe(c, root) for c in self.hidden_calls[:5]]
        more = f" and {len(self.hidden_calls) - 5} more" if len(self.hidden_calls) > 5 else ""
        return f"; seen passing through Python: {'; '.join(shown)}{more}"

    @property
    def total_bytes(self) -> int:
        return int(round(sum(self._bytes.values(), Fraction(0))))

    @property
    def by_op(self) -> dict:
        return {op: int(round(v)) for op, v in self._bytes.items()}

    @property
    def calls(self) -> dict:
        return dict(self._calls)

    @property
    def payload_bytes(self) -> int:
        return self._payload

    def measured(self, prefix="") -> dict:
        """Flat figures for emit(measured=...)."""
        out = {f"{prefix}total_bytes": self.total_bytes, f"{prefix}payload_bytes": self.payload_bytes}
        for op, value in sorted(self.by_op.items()):
            out[f"{prefix}bytes.{op}"] = value
            out[f"{prefix}calls.{op}"] = self._calls[op]
        return out

    def __repr__(self):
        return f"CollectiveCounter(total_bytes={self.total_bytes}, by_op={self.by_op}, calls={self.calls})"


_NOTE_DISPATCH = ("counted at the dispatcher (c10d and _c10d_functional ops): sees dist.* calls, "
                  "aliases, DDP's reducer, batch_isend_irecv and async ops; not CUDA graph replays "
                  "or collectives issued on other threads")
_NOTE_113 = ("torch without full c10d dispatch (1.13): ops with a c10d dispatcher op (allreduce, "
             "allgather, reduce_scatter, broadcast, reduce, gather, scatter, alltoall, send, recv, "
             "barrier) are counted at the dispatcher, which also sees DDP's C++ reducer and "
             "_broadcast_coalesced; the rest (_allgather_base, _reduce_scatter_base, alltoall_base, "
             "*_coalesced, recv_anysource, monitored_barrier) are counted by patching the "
             "ProcessGroup methods, which C++ callers bypass. A dispatcher op from C++ on a "
             "subgroup is sized as WORLD. Collectives on other threads are not seen")
