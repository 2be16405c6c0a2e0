"""Head against base, traffic (differential.py's `check_traffic`): the collectives each side issued,
compared exactly, hidden ones included (#38 item 4), and said in numbers a reviewer can act on
(#37 item 7): call counts with their bytes, per real step when the scenario declares its steps.

A side's figures are the busiest rank's per collective: calls, wire bytes, the collectives its counter
could not see (`hidden`, and `hidden_calls` where they passed through a ProcessGroup method) and the
collectives it saw but could not size (`gaps`, a kit gap). A head whose counted traffic differs, or
whose hidden collectives differ from the base's, fails; sizing gaps that differ make it an error.
"""
from __future__ import annotations

from collections import Counter

from . import _hidden
from .emit import emit


def traffic_figures(counter, tree=None) -> dict:
    """What a side's rank returns of its CollectiveCounter: calls, bytes, hidden collectives (their
    places relative to `tree`, the side's own) and sizing gaps."""
    calls = [dict(c, at=_hidden.where(c, tree)) for c in counter.hidden_calls]
    gaps = [u for u in counter.uncounted if u != counter.hidden_note]
    return {"by_op": dict(counter.by_op), "calls": dict(counter.calls), "bytes": counter.total_bytes,
            "hidden": counter.hidden, "hidden_calls": calls, "gaps": gaps}


def side_traffic(ranks) -> dict:
    """One side's figures over its ranks: the busiest rank per collective and for hidden collectives."""
    calls, by_op = {}, {}
    for r in ranks:
        for op, n in r["calls"].items():
            calls[op] = max(calls.get(op, 0), n)
        for op, b in r["by_op"].items():
            by_op[op] = max(by_op.get(op, 0), b)
    hid = max(ranks, key=lambda r: (r.get("hidden", 0), len(r.get("hidden_calls") or ())))
    gaps = Counter()
    for r in ranks:
        gaps |= Counter(g.split(":", 1)[0] for g in r.get("gaps") or ())
    return {"calls": calls, "by_op": by_op, "bytes": max(r["bytes"] for r in ranks), "hidden": hid.get("hidden", 0),
            "hidden_calls": list(hid.get("hidden_calls") or ()), "gaps": dict(gaps)}


def _num(x) -> str:
    x = float(x)
    return f"{x:,.0f}" if x.is_integer() else f"{x:,.2f}".rstrip("0").rstrip(".")


def _signed(x, unit="B") -> str:
    return f"{'+' if x > 0 else '-' if x < 0 else '±'}{_num(abs(x))} {unit}".rstrip()


def _plural(n, word) -> str:
    return f"{word}{'' if float(n) == 1 else 's'}"


def _op_changes(b, h, per, steps) -> list:
    """One item per collective whose calls or bytes differ: `+1 all_reduce call per step (4 → 5), bytes 4,096 → 4,100 (+4 B)`."""
    items = []
    for op in sorted(set(b["calls"]) | set(h["calls"]) | set(b["by_op"]) | set(h["by_op"])):
        bc, hc = b["calls"].get(op, 0) / steps, h["calls"].get(op, 0) / steps
        bb, hb = b["by_op"].get(op, 0) / steps, h["by_op"].get(op, 0) / steps
        if bc == hc and bb == hb:
            continue
        data = f"bytes {_num(bb)} → {_num(hb)} ({_signed(hb - bb)})" if bb != hb else f"bytes unchanged ({_num(bb)})"
        if bc != hc:
            d = hc - bc
            items.append(f"{'+' if d > 0 else '-'}{_num(abs(d))} {op} {_plural(abs(d), 'call')} per {per} ({_num(bc)} → {_num(hc)}), {data}")
        else:
            ratio = f", {hb / bb:.2f}× base" if bb else ""
            items.append(f"{op}: the same {_num(hc)} {_plural(hc, 'call')} per {per}, {data[:-1]}{ratio})")
    return items


def _hidden_text(side) -> str:
    """`all_reduce of 1,024 B (group of 2) on thread 'Thread-1 (_spare)' at lib.py:9`, or `none`."""
    if not side["hidden"]:
        return "none"
    shown = "; ".join(_hidden.describe(c) for c in side["hidden_calls"][:5])
    more = f" and {len(side['hidden_calls']) - 5} more" if len(side["hidden_calls"]) > 5 else ""
    unknown = side["hidden"] - len(side["hidden_calls"])
    rest = f"{'; ' if shown else ''}{unknown} not through a ProcessGroup method (a functional collective or C++)" if unknown > 0 else ""
    return f"{shown}{more}{rest}"


def _hidden_key(side):
    return side["hidden"], sorted((c.get("op"), c.get("bytes")) for c in side["hidden_calls"])


def _side_channel(wire, same):
    """The record's word (#38): with the counted collectives the same, more bytes on the job's loopback
    for the head than for the base (its uncounted run, read by the kernel) are traffic beside them."""
    if not same or not {"base", "head"} <= set(wire):
        return None
    b, h = wire["base"], wire["head"]
    tol = int(16 * 1024 + 0.01 * b)
    if h - b <= tol:
        return None
    return (f"a side channel: the counted collectives are the same, but the kernel carried {_num(h)} B between head's ranks "
            f"against base's {_num(b)} B ({_signed(h - b)}; allowed {_num(tol)} B of transport noise) in the run without a "
            "counter: traffic beside the collectives (the store, a socket)")


def compare(counts, per="call", steps=1, wire=None):
    """(status, message, measured) of the traffic comparison of `counts` (side -> per-rank figures), and of
    `wire` (side -> loopback bytes of the side's uncounted run, where measured)."""
    b, h = side_traffic(counts["base"]), side_traffic(counts["head"])
    over = f" over {steps} {_plural(steps, per)}" if steps != 1 else ""
    measured = {"base_bytes_per_" + per: b["bytes"] / steps, "head_bytes_per_" + per: h["bytes"] / steps}
    for op in sorted(set(b["calls"]) | set(h["calls"])):
        measured[f"base_{op}_calls"] = b["calls"].get(op, 0)
        measured[f"head_{op}_calls"] = h["calls"].get(op, 0)
    measured.update(base_hidden_collectives=b["hidden"], head_hidden_collectives=h["hidden"])
    if steps != 1:
        measured["steps"] = steps
    for side, n in (wire or {}).items():
        measured[f"{side}_wire_bytes"] = n
    bb, hb = b["bytes"] / steps, h["bytes"] / steps
    same = (b["calls"], b["by_op"], b["bytes"]) == (h["calls"], h["by_op"], h["bytes"])
    parts, status = [], "passed"
    if not same:
        status = "failed"
        items = _op_changes(b, h, per, steps)
        if b["calls"] == h["calls"]:
            how = f"{hb / bb:.2f}× the bytes of base" if bb else f"{_num(hb)} B where base moves none"
            parts.append(f"head moves {how} per {per}{over} in the same calls ({_num(bb)} → {_num(hb)} B, {_signed(hb - bb)}): " + "; ".join(items))
        else:
            total = f"; in all {_num(bb)} → {_num(hb)} B per {per} ({_signed(hb - bb)})" if len(set(b["calls"]) | set(h["calls"])) > 1 else ""
            parts.append(f"head's collectives differ from base's per {per}{over}: " + "; ".join(items) + total)
    else:
        ops = ", ".join(f"{op} {_num(n / steps)} {_plural(n / steps, 'call')}" for op, n in sorted(h["calls"].items()))
        parts.append(f"head and base move the same {_num(hb)} B per {per}{over}" + (f" ({ops} per {per})" if ops else ""))
    if _hidden_key(b) != _hidden_key(h):
        status = "failed"
        n = h["hidden"]
        lead = (f"head issued {n} {_plural(n, 'collective')} the counter could not see in its counted run (another thread, the "
                f"dispatch mode disabled, a method bound before it), base {b['hidden'] or 'none'}: {_hidden_text(h)}")
        if b["hidden"]:
            lead += f"; base's: {_hidden_text(b)}"
        parts.insert(0, lead + ("; what the counter saw: " if same else ""))
    elif h["hidden"]:
        parts.append(f"both sides issued {h['hidden']} {_plural(h['hidden'], 'collective')} the counter could not see (their "
                     f"bytes are not compared): {_hidden_text(h)}")
    channel = _side_channel(wire or {}, same)
    if channel:
        status = "failed"
        parts.insert(0, channel + "; what the counter saw: ")
    if b["gaps"] != h["gaps"]:
        status = "error" if status == "passed" else status
        fmt = lambda g: ", ".join(f"{op} ×{n}" for op, n in sorted(g.items())) or "none"  # noqa: E731
        parts.append(f"collectives the kit could not size (a kit gap): head {fmt(h['gaps'])}, base {fmt(b['gaps'])}")
    if len(parts) > 1 and parts[0].endswith("; what the counter saw: "):
        parts[:2] = [parts[0] + parts[1]]
    return status, "; ".join(parts), measured


def check_traffic(counts, id, per="call", steps=1, requirements=None, location=None, wire=None):
    status, message, measured = compare(counts, per, steps, wire)
    return emit(id, "traffic", status, message, location, measured, requirements)
