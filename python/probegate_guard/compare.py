"""Compares the tests of the PR's base with the head's: every way a change can turn CI green
without making the code right (deleting, skipping, deselecting, narrowing or weakening a test).

Each finding names the test, the file and the line (in the head where the test still exists, in
the base where it is gone), the kind, and what changed (base → head).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from .assertions import compare_asserts
from .checks import INVERSE_TOLERANCES, TestFn, Tolerance
from .rewrites import extension_keeps, skip_spares_base_cases

KINDS = ("deleted", "skipped", "deselected", "narrowed", "assertion-removed", "expectation-changed", "tolerance-loosened", "exception-widened", "unparsable")
BROAD_EXCEPTIONS = {"Exception", "BaseException", "object"}


@dataclass
class Finding:
    kind: str
    test: str
    file: str
    line: int
    message: str

    def to_json(self) -> dict:
        return asdict(self)


def _loosened(base_value: float | None, head_value: float | None, inverse: bool) -> bool:
    if base_value is None or head_value is None:
        return False
    return head_value < base_value if inverse else head_value > base_value


def _told(t: Tolerance) -> str:
    """A tolerance as a reviewer needs it: `1e-5`, `1e-3 (EQUIV_RTOL)`, or the name and why its
    value could not be read."""
    if t.read is not None and t.value is not None:
        return f"{t.read} ({t.source})"
    if t.value is None and t.why:
        return f"{t.source} (its value could not be read: {t.why})"
    return t.source


def _by_occurrence(tolerances) -> dict:
    """Tolerances keyed by (call, keyword, k-th such call in the test): two `allclose` calls in one
    test are compared each with its own counterpart, not the last with both."""
    seen: dict = {}
    out = {}
    for t in tolerances:
        k = seen.get((t.call, t.name), 0)
        seen[(t.call, t.name)] = k + 1
        out[(t.call, t.name, k)] = t
    return out


def compare_test(base: TestFn, head: TestFn, head_file: str) -> list[Finding]:
    """What the head did to one test that exists on both sides."""
    out: list[Finding] = []
    f = lambda kind, line, msg: out.append(Finding(kind, head.id, head_file, line, msg))  # noqa: E731
    base_skips = {s for s, _ in base.skips}
    base_pv = [(names, values) for names, values, _ in base.params]
    head_pv = [(names, values) for names, values, _ in head.params]
    for s, line in head.skips:
        if s in base_skips:
            continue
        if any(skip_spares_base_cases(c, base_pv, head_pv) for c in head.skip_conditions.get(line, [])):
            continue  # one of the `if`s around it is false for every base case: it skips only cases the head added
        f("skipped", line, f"{head.name} is now skipped or expected to fail: {s}")
    base_params = {names: values for names, values, _ in base.params}
    for names, values, line in head.params:
        before = base_params.get(names)
        if before is None:
            continue
        dropped = [v for v in before if v not in values]
        if dropped:
            f("narrowed", line, f"{head.name}'s parametrization of {names} lost {len(dropped)} of {len(before)} cases: {', '.join(dropped[:5])}{' …' if len(dropped) > 5 else ''}")
    head_params = {names for names, _, _ in head.params}
    for names, values, line in base.params:
        if names not in head_params and len(values) > 1:
            if any(extension_keeps(names, values, hn, hv) for hn, hv in head_pv):
                continue  # parametrized over more names, every base case kept
            f("narrowed", head.line, f"{head.name} is no longer parametrized over {names} ({len(values)} cases at the base, line {line})")
    for kind, line, msg in compare_asserts(base, head):
        f(kind, line, msg)
    head_tols = _by_occurrence(head.tolerances)
    base_tols = _by_occurrence(base.tolerances)
    for key, t in head_tols.items():
        b = base_tols.get(key)
        inverse = t.name in INVERSE_TOLERANCES
        if b is None:
            if t.value is None or (t.value != 0 and not inverse):
                f("tolerance-loosened", t.line, f"{head.name} adds {t.name}={_told(t)} to {t.call} (the base used its default): now `{t.code}`")
        elif _loosened(b.value, t.value, inverse) or (b.value is not None and t.value is None):
            f("tolerance-loosened", t.line, f"{head.name} loosens {t.call}'s {t.name} from {_told(b)} to {_told(t)}: now `{t.code}`")
    for r in head.raises:
        b = next((x for x in base.raises if x.call == r.call), None)
        if b is None:
            continue
        wider = [t for t in r.types if t not in b.types]
        if wider and (any(t in BROAD_EXCEPTIONS for t in wider) or len(r.types) > len(b.types)):
            f("exception-widened", r.line, f"{head.name} accepts {', '.join(r.types)} where the base expected {', '.join(b.types)}")
        elif b.match is not None and r.match is None:
            f("exception-widened", r.line, f"{head.name} no longer matches the message of {', '.join(r.types)} (base: match={b.match})")
    return _once(out)


def _once(findings: list[Finding]) -> list[Finding]:
    """One finding per weakened check. Each check is recorded once (checks.scan_body); this keeps
    any two findings of the same kind, place and message, whatever their cause, from becoming two
    failed checks under two ids."""
    out, seen = [], set()
    for x in findings:
        key = (x.kind, x.file, x.line, x.message)
        if key not in seen:
            seen.add(key)
            out.append(x)
    return out


def compare_files(base_tests: dict[str, dict[str, TestFn]], head_tests: dict[str, dict[str, TestFn]]) -> list[Finding]:
    """`*_tests`: file → test id → test. Tests are matched by id; a test missing from the head
    counts as moved (not a finding) only where a head test anywhere has the very same body."""
    out: list[Finding] = []
    head_by_id = {tid: (path, t) for path, tests in head_tests.items() for tid, t in tests.items()}
    head_bodies = {t.body_key for tests in head_tests.values() for t in tests.values()}
    for path, tests in base_tests.items():
        for tid, base in tests.items():
            found = head_by_id.get(tid)
            if found is None:
                if base.body_key in head_bodies:
                    continue
                where = "its file was deleted" if path not in head_tests else "it is gone from its file"
                out.append(Finding("deleted", tid, path, base.line, f"{base.name} exists at the base but not in the head ({where}, and no head test has its body)"))
                continue
            out.extend(compare_test(base, found[1], found[0]))
    return out
