"""Matches a test's base assertions with its head's, and says what became of each one the head
does not keep: every message quotes the head's code at the line it names, and never calls a check
gone that the head still makes.

Order: the same check (its text, or its text with the names read as their values: `x == EXPECTED`
with `EXPECTED = 3` is `x == 3`), then a check rewritten in place (rewrites.keeps_assertion), then
the same check against another expected value, then the head's check of the same call or subject
in its place, then what is simply gone.
"""
from __future__ import annotations

from .checks import Check, TestFn
from .rewrites import bound_to_base_value, expectation_changed, keeps_assertion, same_subject
from .values import same_literal

MAX_READS = 3


def _conflict(a: Check, h: Check) -> bool:
    """Both sides read a name of the check, each as another value (a constant the head changed)."""
    return any(not same_literal(a.reads[n], h.reads[n]) for n in a.reads.keys() & h.reads.keys())


def _same(a: Check, h: Check) -> bool:
    return (a.key == h.key and not _conflict(a, h)) or a.resolved == h.resolved


def _values(c: Check) -> str:
    """` (EXPECTED = 4)`: the names the check reads, with their values."""
    if not c.reads:
        return ""
    shown = [f"{n} = {v}" for n, v in list(c.reads.items())[:MAX_READS]]
    return f" ({', '.join(shown)}{', …' if len(c.reads) > MAX_READS else ''})"


def _where(a: Check, h: Check) -> str:
    new = [c for c in h.conditions if c not in a.conditions]
    return f", and only when `{' and '.join(new)}`" if new else ""


def _pop(checks: list[Check], match) -> Check | None:
    found = next((h for h in checks if match(h)), None)
    if found is not None:
        checks.remove(found)
    return found


def compare_asserts(base: TestFn, head: TestFn) -> list[tuple[str, int, str]]:
    """(kind, head line, message) for each base assertion the head does not keep."""
    out: list[tuple[str, int, str]] = []
    left = list(head.asserts)
    gone = [a for a in base.asserts if _pop(left, lambda h, a=a: _same(a, h)) is None]
    for a in gone:
        if _pop(left, lambda h: keeps_assertion(a.resolved, h.resolved) or keeps_assertion(a.key, h.key)) is not None:
            continue
        changed = _pop(left, lambda h: expectation_changed(a.resolved, h.resolved) or expectation_changed(a.key, h.key))
        if changed is not None:
            if bound_to_base_value(a.resolved, changed.resolved, head.helper_args.get(changed, [])):
                continue
            out.append(("expectation-changed", changed.line, f"{head.name} now checks `{changed.code}`{_values(changed)} where the base checked `{a.code}`{_values(a)} (base line {a.line}){_where(a, changed)}"))
            continue
        instead = _pop(left, lambda h: same_subject(a.resolved, h.resolved) or same_subject(a.key, h.key))
        if instead is not None:
            out.append(("assertion-removed", instead.line, f"{head.name} now checks `{instead.code}`{_values(instead)} in place of the base's `{a.code}`{_values(a)} (base line {a.line}){_where(a, instead)}"))
            continue
        still = [h for h in head.asserts if _same(a, h)]
        if still:
            had = sum(1 for b in base.asserts if _same(b, still[0]))
            times = f"{len(still)} time{'s' if len(still) != 1 else ''}"
            out.append(("assertion-removed", still[0].line, f"{head.name} checks `{still[0].code}` {times} where the base checked it {had} times (base line {a.line})"))
            continue
        out.append(("assertion-removed", head.line, f"{head.name} no longer checks `{a.code}` (base line {a.line})"))
    return out
