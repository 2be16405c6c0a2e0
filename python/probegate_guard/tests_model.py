"""What a pytest/unittest test file holds, as the weakened-test guard compares it.

Parsing only: nothing of the file is imported or run (the head's files are the submission's and
hostile). A test is a `test*` function at module level or in a `Test*`/`unittest.TestCase` class;
its id is pytest's (`path::Class::name`). Its checks include those of the file's helpers it calls.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

SKIP_MARKS = {"skip", "skipif", "xfail"}
UNITTEST_SKIPS = {"skip", "skipIf", "skipUnless", "expectedFailure"}
# Keyword arguments that are tolerances: a larger value accepts more (places/decimal: a smaller one does).
TOLERANCES = {"atol", "rtol", "rel", "abs", "delta", "eps", "tol", "tolerance"}
INVERSE_TOLERANCES = {"places", "decimal"}
ASSERT_CALL_PREFIXES = ("assert", "assert_")
RAISES_CALLS = {"raises", "assertRaises", "assertRaisesRegex", "assertWarns", "assertWarnsRegex"}


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


@dataclass
class Tolerance:
    call: str
    name: str
    value: float | None  # None: not a number literal
    source: str
    line: int


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
    asserts: list[tuple[str, int]] = field(default_factory=list)
    tolerances: list[Tolerance] = field(default_factory=list)
    raises: list[Raises] = field(default_factory=list)
    # line of a skip call in the body -> the conditions of the `if`s it sits in (rewrites.skip_spares_base_cases)
    skip_conditions: dict[int, list[str]] = field(default_factory=dict)
    # checks that come from a helper the test calls: (text, line) -> what each call passed for each of
    # the helper's parameters, as literal text where the test's own `name = literal` says what it is
    helper_args: dict[tuple[str, int], list[dict[str, str]]] = field(default_factory=dict)


def _skip_of(dec: ast.expr) -> str | None:
    target = dec.func if isinstance(dec, ast.Call) else dec
    name = dotted(target)
    last = name.rsplit(".", 1)[-1]
    if ("mark" in name.split(".") and last in SKIP_MARKS) or (name.startswith("unittest.") and last in UNITTEST_SKIPS):
        return text(dec)
    if name in UNITTEST_SKIPS and name != "skip":  # from unittest import skipIf
        return text(dec)
    return None


def _params_of(dec: ast.expr) -> tuple[str, list[str]] | None:
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


def _scan_body(fn: TestFn, body: list[ast.stmt], source: str) -> None:
    conditions = _if_conditions(body)
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Assert):
            fn.asserts.append((_without_tolerances(node.test), node.lineno))
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
            elif last.startswith(ASSERT_CALL_PREFIXES) or last in ("allclose", "isclose", "approx", "equal", "array_equal"):
                # Keyed without its tolerances: a loosened tolerance is its own finding, not a removed assertion.
                fn.asserts.append((_without_tolerances(node), node.lineno))
            for k in node.keywords:
                if k.arg in TOLERANCES or k.arg in INVERSE_TOLERANCES:
                    value = None
                    try:
                        v = ast.literal_eval(k.value)
                        if isinstance(v, (int, float)) and not isinstance(v, bool):
                            value = float(v)
                    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                        pass
                    fn.tolerances.append(Tolerance(last, k.arg, value, ast.get_source_segment(source, k.value) or text(k.value), node.lineno))


def _is_testcase(cls: ast.ClassDef) -> bool:
    return cls.name.startswith("Test") or any(dotted(b).endswith("TestCase") for b in cls.bases)


def _test(prefix: str, f: ast.FunctionDef | ast.AsyncFunctionDef, class_skips: list[tuple[str, int]], source: str) -> TestFn:
    body_key = ast.dump(ast.Module(body=f.body, type_ignores=[]), annotate_fields=False)
    fn = TestFn(id=f"{prefix}::{f.name}", name=f.name, line=f.lineno, body_key=body_key)
    fn.skips.extend(class_skips)
    for dec in f.decorator_list:
        s = _skip_of(dec)
        if s:
            fn.skips.append((s, dec.lineno))
        p = _params_of(dec)
        if p:
            fn.params.append((p[0], p[1], dec.lineno))
    _scan_body(fn, f.body, source)
    return fn


def module_skips(tree: ast.Module) -> list[tuple[str, int]]:
    """`pytestmark = pytest.mark.skip(...)` and module-level `pytest.skip(..., allow_module_level=True)`."""
    out: list[tuple[str, int]] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            marks = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            out.extend((text(m), node.lineno) for m in marks if _skip_of(m))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and dotted(node.value.func) in ("pytest.skip", "pytest.importorskip"):
            out.append((text(node.value), node.lineno))
    return out


def _helpers(body: list[ast.stmt]) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {n.name: n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("test")}


def _constants(f: ast.AST) -> dict[str, str]:
    """`name = <literal>` that is the only binding of `name` in the function (no other assignment,
    unpacking, loop or `with` target, walrus, augmented assignment or parameter of that name):
    name -> the literal's text."""
    stores: dict[str, int] = {}
    for node in ast.walk(f):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, ast.arg):
            stores[node.arg] = stores.get(node.arg, 0) + 2  # a parameter is a binding of its own
    out: dict[str, str] = {}
    for node in ast.walk(f):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if stores.get(name) == 1 and _is_literal(node.value):
                out[name] = text(node.value)
    return out


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def _call_sites(f: ast.AST, target: tuple[str, ast.FunctionDef | ast.AsyncFunctionDef], constants: dict[str, str]) -> list[dict[str, str]]:
    """For each call of the helper in `f`: parameter -> the argument's text, a Name replaced by the
    literal the function assigns it once. Calls with *args or **kwargs bind nothing."""
    prefix, helper = target
    params = [a.arg for a in helper.args.posonlyargs + helper.args.args]
    if prefix == "self." and params:
        params = params[1:]
    out = []
    for node in ast.walk(f):
        if not isinstance(node, ast.Call):
            continue
        fn_text = text(node.func)
        if fn_text != prefix + helper.name:
            continue
        bound: dict[str, str] = {}
        if not any(isinstance(a, ast.Starred) for a in node.args) and all(k.arg for k in node.keywords):
            pairs = list(zip(params, node.args)) + [(k.arg, k.value) for k in node.keywords]
            for name, value in pairs:
                v = text(value)
                bound[name] = constants.get(v, v) if isinstance(value, ast.Name) else v
        out.append(bound)
    return out


def _add_helper_checks(fn: TestFn, f: ast.AST, funcs: dict, methods: dict, source: str) -> None:
    """Adds the checks of the helpers the test calls (`helper(...)` at module level, `self.helper(...)`
    in its class), and of the helpers those call, each once: a PR that moves a test's asserts into a
    helper keeps them (vLLM 0.16.0 moved a nested `test_partial_request_hit` to module level)."""
    seen: set[str] = set()
    constants = _constants(f)
    todo = [f]
    while todo and len(seen) < 50:
        for node in ast.walk(todo.pop()):
            if not isinstance(node, ast.Call):
                continue
            target = None
            if isinstance(node.func, ast.Name) and node.func.id in funcs:
                target = ("", funcs[node.func.id])
            elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id in ("self", "cls") and node.func.attr in methods:
                target = ("self.", methods[node.func.attr])
            if target is None or target[0] + target[1].name in seen:
                continue
            seen.add(target[0] + target[1].name)
            inner = TestFn(id="", name="", line=0, body_key="")
            _scan_body(inner, target[1].body, source)
            calls = _call_sites(f, target, constants)
            for a in inner.asserts:
                fn.helper_args[a] = calls
            fn.asserts.extend(inner.asserts)
            fn.tolerances.extend(inner.tolerances)
            fn.raises.extend(inner.raises)
            todo.append(target[1])


def parse_tests(path: str, source: str) -> dict[str, TestFn]:
    """The tests of one file by id, each with the checks of the helpers it calls. Raises SyntaxError
    (and RecursionError on absurd nesting)."""
    tree = ast.parse(source, filename=path)
    mod_skips = module_skips(tree)
    funcs = _helpers(tree.body)
    tests: dict[str, TestFn] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            t = _test(path, node, mod_skips, source)
            _add_helper_checks(t, node, funcs, {}, source)
            tests[t.id] = t
        elif isinstance(node, ast.ClassDef) and _is_testcase(node):
            class_skips = mod_skips + [(s, d.lineno) for d in node.decorator_list if (s := _skip_of(d))]
            class_params = [p for d in node.decorator_list if (p := _params_of(d))]
            methods = _helpers(node.body)
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"):
                    t = _test(f"{path}::{node.name}", item, class_skips, source)
                    t.params.extend((n, v, node.lineno) for n, v in class_params)
                    _add_helper_checks(t, item, funcs, methods, source)
                    tests[t.id] = t
    return tests
