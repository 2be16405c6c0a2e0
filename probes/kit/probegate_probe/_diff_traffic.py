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

from . import _hidden, _sites
from .emit import emit


def traffic_figures(counter, tree=None) -> dict:
    """What a side's rank returns of its CollectiveCounter: calls, bytes, hidden collectives (their
    places relative to `tree`, the side's own) and sizing gaps."""
    calls = [dict(c, at=_hidden.where(c, tree)) for c in counter.hidden_calls]
    gaps = [u for u in counter.uncounted if u != counter.hidden_note]
    return {"by_op": dict(counter.by_op), "calls": dict(counter.calls), "bytes": counter.total_bytes,
            "hidden": counter.hidden, "hidden_calls": calls, "gaps": gaps, "sites": _sites.figures(getattr(counter, "sites", {}), tree)}


def side_traffic(ranks) -> dict:
    """One side's figures over its ranks: the busiest rank per collective, per call site and for hidden collectives."""
    calls, by_op, sites = {}, {}, {}
    for r in ranks:
        for site in r.get("sites") or ():
            key = (site["op"], site["path"], site["line"], site["func"])
            got = sites.setdefault(key, dict(site))
            got["calls"], got["bytes"] = max(got["calls"], site["calls"]), max(got["bytes"], site["bytes"])
        for op, n in r["calls"].items():
            calls[op] = max(calls.get(op, 0), n)
        for op, b in r["by_op"].items():
            by_op[op] = max(by_op.get(op, 0), b)
    hid = max(ranks, key=lambda r: (r.get("hidden", 0), len(r.get("hidden_calls") or ())))
    by_site = {}
    for site in sites.values():
        by_site.setdefault(site["op"], []).append(site)
    gaps = Counter()
    for r in ranks:
        gaps |= Counter(g.split(":", 1)[0] for g in r.get("gaps") or ())
    return {"calls": calls, "by_op": by_op, "bytes": max(r["bytes"] for r in ranks), "hidden": hid.get("hidden", 0),
            "hidden_calls": list(hid.get("hidden_calls") or ()), "gaps": dict(gaps), "sites": by_site}


def _num(x) -> str:
    x = float(x)
    return f"{x:,.0f}" if x.is_integer() else f"{x:,.2f}".rstrip("0").rstrip(".")


def _signed(x, unit="B") -> str:
    return f"{'+' if x > 0 else '-' if x < 0 else '±'}{_num(abs(x))} {unit}".rstrip()


def _plural(n, word) -> str:
    return f"{word}{'' if float(n) == 1 else 's'}"


def _ratio(h, b):
    """`1.49` (head ÷ base), or None where there is no base or the ratio would round a difference away."""
    if not b:
        return None
    text = f"{h / b:.2f}"
    return None if text == "1.00" and h != b else text


def _even(div, *figures) -> bool:
    return all(float(x) % div == 0 for x in figures)


def _op_changes(b, h, per, div) -> list:
    """One item per collective whose calls or bytes differ: `+1 all_reduce call per step (4 → 5), bytes 4,096 → 4,100
    (+4 B)`, per `per` where every figure divides into `div` (the steps), else over the steps; then the head's call
    sites that differ from the base's, where the ranks recorded them."""
    items = []
    for op in sorted(set(b["calls"]) | set(h["calls"]) | set(b["by_op"]) | set(h["by_op"])):
        raw = (b["calls"].get(op, 0), h["calls"].get(op, 0), b["by_op"].get(op, 0), h["by_op"].get(op, 0))
        if raw[0] == raw[1] and raw[2] == raw[3]:
            continue
        even = _even(div, *raw)
        unit = f"per {per}" if even else f"over {_num(div)} {_plural(div, per)}"
        bc, hc, bb, hb = (x / (div if even else 1) for x in raw)
        data = f"bytes {_num(bb)} → {_num(hb)} ({_signed(hb - bb)})" if bb != hb else f"bytes unchanged ({_num(bb)})"
        if bc != hc:
            d = hc - bc
            item = f"{'+' if d > 0 else '-'}{_num(abs(d))} {op} {_plural(abs(d), 'call')} {unit} ({_num(bc)} → {_num(hc)}), {data}"
        else:
            ratio = _ratio(hb, bb)
            item = f"{op}: the same {_num(hc)} {_plural(hc, 'call')} {unit}, {data[:-1]}{f', {ratio}× base' if ratio else ''})"
        places = _site_text(_site_changes(b["sites"].get(op, []), h["sites"].get(op, [])))
        items.append(item + (f", {places}" if places else ""))
    return items


def _site_changes(bs, hs) -> list:
    """(head site, its base counterpart or None) for each head call site whose calls or bytes differ from the
    base's, then (None, base site) for base sites the head lacks. A site is matched on path, function and line,
    else on path and function in line order (a PR that moves a call keeps its site)."""
    left = sorted(bs, key=lambda s: (s["path"], s["line"]))
    out, pending = [], []
    for s in sorted(hs, key=lambda s: (s["path"], s["line"])):
        m = next((x for x in left if (x["path"], x["func"], x["line"]) == (s["path"], s["func"], s["line"])), None)
        if m is None:
            pending.append(s)
            continue
        left.remove(m)
        if (m["calls"], m["bytes"]) != (s["calls"], s["bytes"]):
            out.append((s, m))
    for s in pending:
        m = next((x for x in left if (x["path"], x["func"]) == (s["path"], s["func"])), None)
        if m is not None:
            left.remove(m)
        if m is None or (m["calls"], m["bytes"]) != (s["calls"], s["bytes"]):
            out.append((s, m))
    return out + [(None, m) for m in left]


def _at(s) -> str:
    where = f"{s['path']}:{s['line']}" if s["path"] else "a call from C++ with no Python caller"
    return where + (f" in {s['func']}" if s["func"] else "")


def _site_text(changes) -> str:
    """`new in head at lib.py:7 in step (4 calls in all)`, `changed in head at …`, `gone from head: base's …`."""
    said = []
    for s, m in changes[:3]:
        if s is None:
            said.append(f"gone from head: base's {_at(m)} ({_num(m['calls'])} {_plural(m['calls'], 'call')} in all)")
        elif m is None:
            said.append(f"new in head at {_at(s)} ({_num(s['calls'])} {_plural(s['calls'], 'call')} in all)")
        else:
            said.append(f"changed in head at {_at(s)} ({_num(m['calls'])} → {_num(s['calls'])} calls, {_num(m['bytes'])} → {_num(s['bytes'])} B in all)")
    return ", ".join(said) + (f" and {len(changes) - 3} more call sites" if len(changes) > 3 else "")


def _site_location(b, h):
    """{"path", "line"} of the first head call site that differs from the base's, where it lies in the head's tree."""
    for op in sorted(set(h["sites"]) | set(b["sites"])):
        for s, _ in _site_changes(b["sites"].get(op, []), h["sites"].get(op, [])):
            if s is not None and s["path"] and not s["path"].startswith("/") and ".." not in s["path"].split("/"):
                return {"path": s["path"], "line": max(1, int(s["line"]))}
    return None


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


def _side_channel(wire, same, retransmitted=None):
    """The record's word (#38): with the counted collectives the same, more bytes on the job's loopback
    for the head than for the base (its uncounted run, read by the kernel) are traffic beside them. Each
    segment the kernel retransmitted for the head beyond the base's carried its data twice: it excuses
    one segment's data (record.RETRANS_SEGMENT_BYTES), as traffic_of_record does."""
    if not same or not {"base", "head"} <= set(wire):
        return None
    from .record import RETRANS_SEGMENT_BYTES

    b, h = wire["base"], wire["head"]
    again = max(0, (retransmitted or {}).get("head", 0) - (retransmitted or {}).get("base", 0))
    tol = int(16 * 1024 + 0.01 * b) + RETRANS_SEGMENT_BYTES * again
    if h - b <= tol:
        return None
    excused = f", {again} retransmitted segment{'s' if again != 1 else ''} included" if again else ""
    return (f"a side channel: the counted collectives are the same, but the kernel carried {_num(h)} B between head's ranks "
            f"against base's {_num(b)} B ({_signed(h - b)}; allowed {_num(tol)} B of transport noise{excused}) in the run without a "
            "counter: traffic beside the collectives (the store, a socket)")


def _unit(per, steps):
    """(the word, the divisor, the words after `per <word>`): per step over N steps where the scenario declared N
    steps, per call (one call of the scenario, undivided) where it declared none or `per="call"` was asked for."""
    if per is None:
        per = "step" if steps != 1 else "call"
    if per == "call" and steps != 1:
        return per, 1, f" ({_num(steps)} steps per call)"
    return per, steps, f" over {_num(steps)} {_plural(steps, per)}" if steps != 1 else ""


def compare(counts, per=None, steps=1, wire=None, retransmitted=None):
    """(status, message, measured) of the traffic comparison of `counts` (side -> per-rank figures), and of
    `wire` (side -> loopback bytes of the side's uncounted run, where measured)."""
    return _compare(counts, per, steps, wire, retransmitted)[:3]


def _compare(counts, per, steps, wire, retransmitted=None):
    b, h = side_traffic(counts["base"]), side_traffic(counts["head"])
    per, div, over = _unit(per, steps or 1)
    measured = {"base_bytes_per_" + per: b["bytes"] / div, "head_bytes_per_" + per: h["bytes"] / div}
    for op in sorted(set(b["calls"]) | set(h["calls"])):
        measured[f"base_{op}_calls"] = b["calls"].get(op, 0)
        measured[f"head_{op}_calls"] = h["calls"].get(op, 0)
    measured.update(base_hidden_collectives=b["hidden"], head_hidden_collectives=h["hidden"])
    if steps != 1:
        measured["steps"] = steps
    for side, n in (wire or {}).items():
        measured[f"{side}_wire_bytes"] = n
    for side, n in (retransmitted or {}).items():
        measured[f"{side}_retransmitted_segments"] = n
    even = _even(div, b["bytes"], h["bytes"])
    bb, hb = (b["bytes"] / div, h["bytes"] / div) if even else (b["bytes"], h["bytes"])
    tunit = f"per {per}{over}" if even else f"over {_num(div)} {_plural(div, per)}"
    same = (b["calls"], b["by_op"], b["bytes"]) == (h["calls"], h["by_op"], h["bytes"])
    parts, status, place = [], "passed", None
    if not same:
        status = "failed"
        items = _op_changes(b, h, per, div)
        changed = {op for op in set(b["calls"]) | set(h["calls"]) | set(b["by_op"]) | set(h["by_op"])
                   if (b["calls"].get(op, 0), b["by_op"].get(op, 0)) != (h["calls"].get(op, 0), h["by_op"].get(op, 0))}
        place = _site_location({"sites": {op: v for op, v in b["sites"].items() if op in changed}},
                               {"sites": {op: v for op, v in h["sites"].items() if op in changed}})
        if b["calls"] == h["calls"]:
            ratio = _ratio(hb, bb)
            how = (f"{ratio}× the bytes of base" if ratio else f"{'more' if hb > bb else 'fewer'} bytes than base") if bb else f"{_num(hb)} B where base moves none"
            parts.append(f"head moves {how} {tunit} in the same calls ({_num(bb)} → {_num(hb)} B, {_signed(hb - bb)}): " + "; ".join(items))
        else:
            total = f"; in all {_num(bb)} → {_num(hb)} B {f'per {per}' if even else tunit} ({_signed(hb - bb)})" if len(set(b["calls"]) | set(h["calls"])) > 1 else ""
            parts.append(f"head's collectives differ from base's per {per}{over}: " + "; ".join(items) + total)
    else:
        calls_even = _even(div, *h["calls"].values())
        cunit = f"per {per}" if calls_even else f"over {_num(div)} {_plural(div, per)}"
        ops = ", ".join(f"{op} {_num(n / (div if calls_even else 1))} {_plural(n / (div if calls_even else 1), 'call')}" for op, n in sorted(h["calls"].items()))
        parts.append(f"head and base move the same {_num(hb)} B {tunit}" + (f" ({ops} {cunit})" if ops else ""))
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
    channel = _side_channel(wire or {}, same, retransmitted)
    if channel:
        status = "failed"
        parts.insert(0, channel + "; what the counter saw: ")
    if b["gaps"] != h["gaps"]:
        status = "error" if status == "passed" else status
        fmt = lambda g: ", ".join(f"{op} ×{n}" for op, n in sorted(g.items())) or "none"  # noqa: E731
        parts.append(f"collectives the kit could not size (a kit gap): head {fmt(h['gaps'])}, base {fmt(b['gaps'])}")
    if len(parts) > 1 and parts[0].endswith("; what the counter saw: "):
        parts[:2] = [parts[0] + parts[1]]
    return status, "; ".join(parts), measured, place


def check_traffic(counts, id, per=None, steps=1, requirements=None, location=None, wire=None, retransmitted=None):
    """Emits the comparison; without a `location`, a failure points at the head's first call site that differs."""
    status, message, measured, place = _compare(counts, per, steps, wire, retransmitted)
    return emit(id, "traffic", status, message, location if location is not None or status == "passed" else place, measured, requirements)
