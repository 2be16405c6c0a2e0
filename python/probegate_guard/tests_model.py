"""What a pytest/unittest test file holds, as the weakened-test guard compares it.

Parsing only: nothing of the file is imported or run (the head's files are the submission's and
hostile). A test is a `test*` function at module level or in a `Test*`/`unittest.TestCase` class;
its id is pytest's (`path::Class::name`). Its checks (checks.py) include those of the file's
helpers it calls; the names they read are looked up in the file and its tree (values.py).
"""
from __future__ import annotations

import ast

from .checks import Check, Raises, TestFn, Tolerance, dotted, params_of, scan_body, skip_of, text
from .tree_files import Tree
from .values import Scope

__all__ = ["Check", "Raises", "TestFn", "Tolerance", "module_skips", "parse_tests"]


def _is_testcase(cls: ast.ClassDef) -> bool:
    return cls.name.startswith("Test") or any(dotted(b).endswith("TestCase") for b in cls.bases)


def _test(prefix: str, f, class_skips: list[tuple[str, int]], scope: Scope) -> TestFn:
    body_key = ast.dump(ast.Module(body=f.body, type_ignores=[]), annotate_fields=False)
    fn = TestFn(id=f"{prefix}::{f.name}", name=f.name, line=f.lineno, body_key=body_key)
    fn.skips.extend(class_skips)
    for dec in f.decorator_list:
        s = skip_of(dec)
        if s:
            fn.skips.append((s, dec.lineno))
        p = params_of(dec)
        if p:
            fn.params.append((p[0], p[1], dec.lineno))
    scan_body(fn, f.body, scope)
    return fn


def module_skips(tree: ast.Module) -> list[tuple[str, int]]:
    """`pytestmark = pytest.mark.skip(...)` and module-level `pytest.skip(..., allow_module_level=True)`."""
    out: list[tuple[str, int]] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            marks = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            out.extend((text(m), node.lineno) for m in marks if skip_of(m))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and dotted(node.value.func) in ("pytest.skip", "pytest.importorskip"):
            out.append((text(node.value), node.lineno))
    return out


def _helpers(body: list[ast.stmt]) -> dict:
    return {n.name: n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("test")}


def _call_sites(f: ast.AST, target: tuple, scope: Scope) -> list[dict[str, str]]:
    """For each call of the helper in `f`: parameter -> the argument's text, a name or `self.X`
    replaced by the literal it is read as (values.Scope.expr). Calls with *args or **kwargs bind nothing."""
    prefix, helper = target
    params = [a.arg for a in helper.args.posonlyargs + helper.args.args]
    if prefix == "self." and params:
        params = params[1:]
    out = []
    for node in ast.walk(f):
        if not isinstance(node, ast.Call) or text(node.func) != prefix + helper.name:
            continue
        bound: dict[str, str] = {}
        if not any(isinstance(a, ast.Starred) for a in node.args) and all(k.arg for k in node.keywords):
            pairs = list(zip(params, node.args)) + [(k.arg, k.value) for k in node.keywords]
            for name, value in pairs:
                read = scope.expr(value)[0] if isinstance(value, (ast.Name, ast.Attribute)) else None
                bound[name] = read if read is not None else text(value)
        out.append(bound)
    return out


def _add_helper_checks(fn: TestFn, f: ast.AST, funcs: dict, methods: dict, scope: Scope, cls: ast.ClassDef | None) -> None:
    """Adds the checks of the helpers the test calls (`helper(...)` at module level, `self.helper(...)`
    in its class), and of the helpers those call, each once: a PR that moves a test's asserts into a
    helper keeps them (vLLM 0.16.0 moved a nested `test_partial_request_hit` to module level)."""
    seen: set[str] = set()
    file = scope.file
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
            scan_body(inner, target[1].body, file.function_scope(target[1], cls if target[0] else None))
            calls = _call_sites(f, target, scope)
            for a in inner.asserts:
                fn.helper_args[a] = calls
            fn.asserts.extend(inner.asserts)
            fn.tolerances.extend(inner.tolerances)
            fn.raises.extend(inner.raises)
            todo.append(target[1])


def parse_tests(path: str, source: str, tree: Tree | None = None) -> dict[str, TestFn]:
    """The tests of one file by id, each with the checks of the helpers it calls; names are read in
    `tree` (the file's own tree, for imported constants) or in the file alone. Raises SyntaxError
    (and RecursionError on absurd nesting)."""
    module = ast.parse(source, filename=path)
    file = (tree or Tree(None)).add(path, module, source)
    mod_skips = module_skips(module)
    funcs = _helpers(module.body)
    tests: dict[str, TestFn] = {}
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            scope = file.function_scope(node, None)
            t = _test(path, node, mod_skips, scope)
            _add_helper_checks(t, node, funcs, {}, scope, None)
            tests[t.id] = t
        elif isinstance(node, ast.ClassDef) and _is_testcase(node):
            class_skips = mod_skips + [(s, d.lineno) for d in node.decorator_list if (s := skip_of(d))]
            class_params = [p for d in node.decorator_list if (p := params_of(d))]
            methods = _helpers(node.body)
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"):
                    scope = file.function_scope(item, node)
                    t = _test(f"{path}::{node.name}", item, class_skips, scope)
                    t.params.extend((n, v, node.lineno) for n, v in class_params)
                    _add_helper_checks(t, item, funcs, methods, scope, node)
                    tests[t.id] = t
    return tests
