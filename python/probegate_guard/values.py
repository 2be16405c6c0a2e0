"""The value of a name a test passes: a tolerance or an expected value given through a constant
(`rtol=EQUIV_RTOL`), so that moving a literal into a named constant of the same value is no
weakening (a same-value refactor was flagged "from 1e-5 to EQUIV_RTOL" on a real PR).

Parsing only: nothing of either tree is imported. A name is read as a literal only where that
literal is its one binding in its scope (the function, the class body, the module), or an import
of such a name from a file of the same tree (`from tests.constants import X`, `from .common import
X`). Any other binding of the same name (a second assignment, an unpacking, a loop, `with` or
`except` target, a parameter, `global`, a `from … import *`) leaves it unread, and says why.
"""
from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tree_files import Tree

MAX_DEPTH = 8
_EVAL_ERRORS = (ValueError, TypeError, SyntaxError, MemoryError, RecursionError)
OTHER = ("other", "a `def` or `class`")  # a binding whose value the guard does not read
_NAMED = tuple(getattr(ast, n) for n in ("ExceptHandler", "MatchAs", "MatchStar", "MatchMapping") if hasattr(ast, n))

_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # lines as the parser counts them
Read = tuple  # (the literal's source text, "") or (None, why it could not be read)


def is_literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except _EVAL_ERRORS:
        return False


def _immutable(v: object) -> bool:
    if isinstance(v, tuple):
        return all(_immutable(x) for x in v)
    return isinstance(v, (int, float, complex, str, bytes, bool, type(None)))


def dotted_parts(node: ast.AST) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None for anything but a chain of names."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _scope_nodes(stmts: list[ast.stmt], whole: bool):
    """The nodes of one scope: with `whole`, everything below (a function: its nested functions'
    bindings count against its own names, which only errs towards not reading); without, the
    module's or class's own, not the bodies of the functions and classes it defines."""
    todo: list[ast.AST] = list(stmts)
    while todo:
        node = todo.pop()
        yield node
        if not whole and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(node))


def _how_bound(nodes: list[ast.AST]) -> dict[int, str]:
    """id of each Name a statement binds other than by `name = value` -> how it binds it."""
    how: dict[int, str] = {}

    def mark(target: ast.AST, what: str) -> None:
        how.update((id(n), what) for n in ast.walk(target) if isinstance(n, ast.Name))

    for node in nodes:
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            mark(node.target, "a loop")
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    mark(item.optional_vars, "a `with`")
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if not isinstance(t, ast.Name):
                    mark(t, "an unpacking")
        elif isinstance(node, ast.AugAssign):
            mark(node.target, "an augmented assignment")
        elif isinstance(node, ast.NamedExpr):
            mark(node.target, "`:=`")
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                mark(t, "a `del`")
    return how


class Scope:
    """The bindings of one scope: name -> every binding, each ("value", expr), ("from", level,
    module, name), ("module", dotted) or ("other", how it binds)."""

    def __init__(self, file: FileValues, stmts: list[ast.stmt], where: str, parent: Scope | None = None, whole: bool = False):
        self.file, self.where, self.parent = file, where, parent
        self.cls: ast.ClassDef | None = None  # a method's class, for `self.X`
        self.binds: dict[str, list[tuple]] = {}
        self.star = False
        nodes = list(_scope_nodes(stmts, whole))
        how = _how_bound(nodes)
        direct = {}
        for node in nodes:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if all(isinstance(t, ast.Name) for t in targets):
                    direct.update((id(t), node.value) for t in targets)
        add = lambda name, b: self.binds.setdefault(name, []).append(b)  # noqa: E731
        for node in nodes:
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                add(node.id, ("value", direct[id(node)]) if id(node) in direct else ("other", how.get(id(node), "an assignment")))
            elif isinstance(node, ast.arg):
                add(node.arg, ("other", "a parameter"))
            elif isinstance(node, ast.Import):
                for a in node.names:
                    add(a.asname or a.name.split(".")[0], ("module", a.name if a.asname else a.name.split(".")[0]))
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.name == "*":
                        self.star = True
                    else:
                        add(a.asname or a.name, ("from", node.level, node.module or "", a.name))
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for n in node.names:
                    add(n, ("other", "a `global`"))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                add(node.name, OTHER)
            elif isinstance(node, _NAMED):  # except … as e, case … as x, case [*rest], case {**rest}
                for n in (getattr(node, "name", None), getattr(node, "rest", None)):
                    if isinstance(n, str):
                        add(n, ("other", "an `except … as` or a `case` pattern"))

    def name(self, name: str, depth: int = 0) -> Read:
        """The literal `name` holds here, or why it cannot be read."""
        if depth > MAX_DEPTH:
            return None, f"`{name}` goes through too many names"
        if self.star:
            return None, f"a `from … import *` in {self.where} may bind `{name}`"
        binds = self.binds.get(name)
        if binds is None:
            if self.parent is not None:
                return self.parent.name(name, depth)
            return None, f"`{name}` is not assigned in {self.where}"
        count = len(binds) + (1 if self.parent is None and name in self.file.globals_ else 0)
        if count > 1:
            return None, f"`{name}` is bound {count} times in {self.where}"
        b = binds[0]
        if b[0] == "value":
            value = ast.literal_eval(b[1]) if is_literal(b[1]) else None
            if not _immutable(value):  # `EXPECTED = [1, 2]` then `EXPECTED.pop()`
                return None, f"`{name}` is bound to a {type(value).__name__}, which the code can change after binding it"
            return self.expr(b[1], depth + 1)
        if b[0] == "from":
            return self.file.tree.imported(self.file.path, b[1], b[2], b[3], depth + 1)
        if b[0] == "module":
            return None, f"`{name}` is a module"
        return None, f"`{name}` is bound by {b[1]} in {self.where}"

    def expr(self, node: ast.AST, depth: int = 0) -> Read:
        """The literal an expression is, or reads through a name or an attribute chain."""
        if is_literal(node):
            return self.file.segment(node) or ast.unparse(node), ""
        parts = dotted_parts(node)
        if parts is None:
            return None, f"`{ast.unparse(node)}` is an expression the guard does not evaluate"
        if len(parts) == 1:
            return self.name(parts[0], depth)
        return self.chain(parts, depth)

    def chain(self, parts: list[str], depth: int) -> Read:
        """`self.X`, `cls.X`, `Class.X` of a class of this file, or `module.X` of a file of the tree."""
        head, text = parts[0], ".".join(parts)
        binds = self._nearest(head)
        if len(parts) == 2:
            cls = self.cls if head in ("self", "cls") else (self.file.classes.get(head) if binds == [OTHER] else None)
            if cls is not None:
                return self.file.class_attr(cls, parts[1], depth)
        if not binds or len(binds) != 1 or binds[0][0] not in ("module", "from"):
            return None, f"`{text}` is not a constant the guard can find"
        b = binds[0]
        level, module = (0, b[1]) if b[0] == "module" else (b[1], ".".join(p for p in (b[2], b[3]) if p))
        return self.file.tree.imported(self.file.path, level, ".".join([module] + parts[1:-1]).strip("."), parts[-1], depth + 1)

    def _nearest(self, name: str) -> list[tuple] | None:
        scope = self
        while scope is not None:
            if name in scope.binds:
                return scope.binds[name]
            scope = scope.parent
        return None


class FileValues:
    """One parsed file of a tree: its module scope and its classes."""

    def __init__(self, tree: Tree, path: str, module: ast.Module, source: str):
        self.tree, self.path, self.source = tree, path, source
        self._lines: list[bytes] | None = None
        # `global X` in any function rebinds the module's X.
        self.globals_ = {n for node in ast.walk(module) if isinstance(node, ast.Global) for n in node.names}
        self.classes = {n.name: n for n in module.body if isinstance(n, ast.ClassDef)}
        # `obj.X = …` or setattr anywhere in the file: no class attribute X is read as its literal.
        self.attr_stores = {n.attr for n in ast.walk(module) if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load)}
        if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "setattr" for n in ast.walk(module)):
            self.attr_stores.add("*")
        self.scope = Scope(self, module.body, path)
        self._class_scopes: dict[str, Scope] = {}

    def segment(self, node: ast.AST) -> str | None:
        """The node's source text, as ast.get_source_segment gives it, without splitting the whole
        file again for each node (that made a 700-line file take seconds)."""
        if self._lines is None:
            self._lines = [line.encode() for line in _LINES.findall(self.source)]
        try:
            l0, l1, c0, c1 = node.lineno - 1, node.end_lineno - 1, node.col_offset, node.end_col_offset
        except AttributeError:
            return None
        if None in (l1, c1) or l1 >= len(self._lines):
            return None
        if l0 == l1:
            return self._lines[l0][c0:c1].decode(errors="replace")
        middle = b"".join(self._lines[l0 + 1 : l1])
        return (self._lines[l0][c0:] + middle + self._lines[l1][:c1]).decode(errors="replace")

    def class_attr(self, cls: ast.ClassDef, attr: str, depth: int, seen: int = 0) -> Read:
        if attr in self.attr_stores or "*" in self.attr_stores:
            return None, f"`{attr}` is also assigned as an attribute in {self.path}"
        scope = self.class_scope(cls)
        if attr in scope.binds:
            return scope.name(attr, depth)
        bases = [self.classes.get(b.id) for b in cls.bases if isinstance(b, ast.Name)]
        for base in bases:
            if base is not None and seen < MAX_DEPTH:
                text, why = self.class_attr(base, attr, depth, seen + 1)
                if text is not None or attr in self.class_scope(base).binds:
                    return text, why
        return None, f"`{attr}` is not an attribute of class {cls.name} that the guard can read"

    def class_scope(self, cls: ast.ClassDef) -> Scope:
        if cls.name not in self._class_scopes:
            self._class_scopes[cls.name] = Scope(self, cls.body, f"class {cls.name} of {self.path}", parent=self.scope)
        return self._class_scopes[cls.name]

    def function_scope(self, fn: ast.AST, cls: ast.ClassDef | None) -> Scope:
        """A function's scope (its whole body, parameters included), then the module's."""
        s = Scope(self, [fn], f"{getattr(fn, 'name', '?')} in {self.path}", parent=self.scope, whole=True)
        s.cls = cls
        return s


class _Substitute(ast.NodeTransformer):
    def __init__(self, scope: Scope):
        self.scope, self.reads = scope, {}

    def _read(self, node: ast.expr) -> ast.expr | None:
        text, _ = self.scope.expr(node)
        if text is None:
            return None
        try:
            new = ast.parse(text, mode="eval").body
        except _EVAL_ERRORS:
            return None
        self.reads[ast.unparse(node)] = text
        return ast.copy_location(new, node)

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return (self._read(node) if isinstance(node.ctx, ast.Load) else None) or node

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        if isinstance(node.ctx, ast.Load) and dotted_parts(node):
            new = self._read(node)
            if new is not None:
                return new
        self.generic_visit(node)
        return node


def with_values(src: str, scope: Scope) -> tuple[str, dict[str, str]]:
    """`src` with every name the scope reads as a literal replaced by it, and those names' values:
    `x == EXPECTED` with `EXPECTED = 3` is `x == 3`, {"EXPECTED": "3"}."""
    try:
        tree = ast.parse(src, mode="eval")
    except _EVAL_ERRORS:
        return src, {}
    sub = _Substitute(scope)
    return ast.unparse(sub.visit(tree)), sub.reads


def same_literal(a: str, b: str) -> bool:
    """Whether two literal texts are the same value (`1e-5` and `0.00001` are)."""
    try:
        return ast.literal_eval(a) == ast.literal_eval(b)
    except _EVAL_ERRORS:
        return a == b
