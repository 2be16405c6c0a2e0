"""The checks one test body makes, as the weakened-test guard compares them: its assertions, its
tolerances, its expected exceptions and its skips, each with its line and its code.

A check is recorded once: `assert torch.allclose(a, b)` is one check, not the assert and the
`allclose` call inside it (the two used to give two findings for one weakened check).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .values import Scope, with_values

SKIP_MARKS = {"skip", "skipif", "xfail"}
UNITTEST_SKIPS = {"skip", "skipIf", "skipUnless", "expectedFailure"}
# Keyword arguments that are tolerances: a larger value accepts more (places/decimal: a smaller one does).
TOLERANCES = {"atol", "rtol", "rel", "abs", "delta", "eps", "tol", "tolerance"}
INVERSE_TOLERANCES = {"places", "decimal"}
ASSERT_CALL_PREFIXES = ("assert", "assert_")
CHECK_CALLS = {"allclose", "isclose", "approx", "equal", "array_equal"}
RAISES_CALLS = {"raises", "assertRaises", "assertRaisesRegex", "assertWarns", "assertWarnsRegex"}
MAX_CODE = 160


def dotted(node: ast.AST) -> str:
    """`pytest.mark.skipif` for the attribute chain, '' for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def text(node: ast.AST) -> str:
    return ast.unparse(node)


def code(scope: Scope, node: ast.AST) -> str:
    """The node's code as the file writes it, on one line, cut at MAX_CODE characters: what a
    finding quotes of the head."""
    s = " ".join((scope.file.segment(node) or text(node)).split())
    return s if len(s) <= MAX_CODE else s[: MAX_CODE - 1] + "…"


@dataclass(eq=False)
class Check:
    """One assertion: `key` is its text without tolerances (a loosened tolerance is its own finding),
    `resolved` the key with the names read as literals (values.with_values), `reads` those names'
    literals, `code` the check as written, `conditions` the `if`s it runs under."""

    key: str
    line: int
    code: str
    resolved: str
    reads: dict[str, str]
    conditions: list[str]


@dataclass
class Tolerance:
    call: str
    name: str
    value: float | None  # None: not a number, or a name whose value could not be read
    source: str  # as written: `1e-5`, `EQUIV_RTOL`
    line: int
    read: str | None = None  # the literal a name stands for, when read
    why: str = ""  # why the value could not be read
    code: str = ""  # the call it is given to


@dataclass
class Raises:
    call: str
    types: list[str]
    match: str | None
    line: int


@dataclass
class TestFn:
    """One test function and the parts of it that the guard compares."""

    id: str
    name: str
    line: int
    body_key: str  # the body without the name and decorators: a moved test keeps it
    skips: list[tuple[str, int]] = field(default_factory=list)
    params: list[tuple[str, list[str], int]] = field(default_factory=list)
    asserts: list[Check] = field(default_factory=list)
    tolerances: list[Tolerance] = field(default_factory=list)
    raises: list[Raises] = field(default_factory=list)
    # line of a skip call in the body -> the conditions of the `if`s it sits in (rewrites.skip_spares_base_cases)
    skip_conditions: dict[int, list[str]] = field(default_factory=dict)
    # checks that come from a helper the test calls -> what each call passed for each of the
    # helper's parameters, as literal text where the value can be read (values.Scope.expr)
    helper_args: dict[Check, list[dict[str, str]]] = field(default_factory=dict)


def skip_of(dec: ast.expr) -> str | None:
    target = dec.func if isinstance(dec, ast.Call) else dec
    name = dotted(target)
    last = name.rsplit(".", 1)[-1]
    if ("mark" in name.split(".") and last in SKIP_MARKS) or (name.startswith("unittest.") and last in UNITTEST_SKIPS):
        return text(dec)
    if name in UNITTEST_SKIPS and name != "skip":  # from unittest import skipIf
        return text(dec)
    return None


def params_of(dec: ast.expr) -> tuple[str, list[str]] | None:
    if not (isinstance(dec, ast.Call) and dotted(dec.func).endswith("mark.parametrize") and len(dec.args) >= 2):
        return None
    names = text(dec.args[0])
    values = dec.args[1]
    if isinstance(values, (ast.List, ast.Tuple, ast.Set)):
        return names, [text(v) for v in values.elts]
    return names, [text(values)]


class _DropTolerances(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        node.keywords = [k for k in node.keywords if k.arg not in TOLERANCES and k.arg not in INVERSE_TOLERANCES]
        return node


def _without_tolerances(node: ast.AST) -> str:
    """The node's text with every tolerance keyword left out (parsed again: the tree is not touched)."""
    return text(_DropTolerances().visit(ast.parse(text(node), mode="eval" if isinstance(node, ast.expr) else "exec")))


def _if_conditions(body: list[ast.stmt]) -> dict[int, list[str]]:
    """id of each node in the body of `if` statements (not their else) -> every such `if`'s condition
    text: the node runs only when all of them are true."""
    out: dict[int, list[str]] = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.If):
            cond = text(node.test)
            for stmt in node.body:
                for inner in ast.walk(stmt):
                    out.setdefault(id(inner), []).append(cond)
    return out


def _is_check_call(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last.startswith(ASSERT_CALL_PREFIXES) or last in CHECK_CALLS


def _tolerance(scope: Scope, call: str, k: ast.keyword, node: ast.Call) -> Tolerance:
    written = scope.file.segment(k.value) or text(k.value)
    literal, why = scope.expr(k.value)
    value = None
    if literal is not None:
        try:
            v = ast.literal_eval(literal)
            value = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        why = "" if value is not None else f"`{literal}` is not a number"
    read = literal if literal is not None and literal != written else None
    return Tolerance(call, k.arg or "", value, written, node.lineno, read, why, code(scope, node))


def scan_body(fn: TestFn, body: list[ast.stmt], scope: Scope) -> None:
    """Adds the checks of `body` to `fn`, names read in `scope`."""
    conditions = _if_conditions(body)
    inside: set[int] = set()  # nodes within a check already recorded

    def record(node: ast.AST, subject: ast.AST) -> None:
        key = _without_tolerances(subject)
        resolved, reads = with_values(key, scope)
        fn.asserts.append(Check(key, node.lineno, code(scope, subject), resolved, reads, conditions.get(id(node), [])))
        inside.update(id(n) for n in ast.walk(node))

    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Assert):
            record(node, node.test)
        elif isinstance(node, ast.Call):
            name = dotted(node.func)
            last = name.rsplit(".", 1)[-1]
            if last in ("skip", "xfail") and name.startswith("pytest."):
                fn.skips.append((text(node), node.lineno))
                if id(node) in conditions:
                    fn.skip_conditions[node.lineno] = conditions[id(node)]
            elif last in ("skipTest",):
                fn.skips.append((text(node), node.lineno))
            if last in RAISES_CALLS:
                types = node.args[0] if node.args else None
                listed = [text(t) for t in types.elts] if isinstance(types, ast.Tuple) else ([text(types)] if types is not None else [])
                match = next((text(k.value) for k in node.keywords if k.arg == "match"), None)
                if match is None and last.endswith("Regex") and len(node.args) > 1:
                    match = text(node.args[1])
                fn.raises.append(Raises(last, listed, match, node.lineno))
            elif _is_check_call(name) and id(node) not in inside:
                record(node, node)
            for k in node.keywords:
                if k.arg in TOLERANCES or k.arg in INVERSE_TOLERANCES:
                    fn.tolerances.append(_tolerance(scope, last, k, node))
