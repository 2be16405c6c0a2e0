"""Changes to a test that keep what the base checked, so the guard does not report them as weakening.

The guard matches a test's checks by their text; a PR that rewrites a check in place, extends a
parametrization or skips only a case it added would otherwise read as a weakened test (three false
rejections in the replays of real merged PRs, bench/results/*-gate-replay.md). Each rule here is
narrow, and errs towards reporting:

- a head assertion `A and X` keeps a base assertion `X` (it checks more);
- a head comparison keeps a base one when the expected side (operators and right-hand operands) is
  the same text and the subject only grew: the same call with positional arguments appended, or an
  attribute or subscript appended (an API that gained a parameter, a dict that became a class);
- a head parametrization keeps a base one when its argument names include the base's and every base
  case, projected on the base's names, is still one of its cases;
- a new `pytest.skip(...)` inside an `if` keeps every base case when the condition, evaluated on the
  literal values of each head case that projects onto a base case, is false for all of them.
"""
from __future__ import annotations

import ast


def _expr(src: str) -> ast.expr | None:
    try:
        return ast.parse(src, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _conjuncts(node: ast.expr) -> list[str]:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return [t for v in node.values for t in _conjuncts(v)]
    return [ast.unparse(node)]


def _subject_grew(base: ast.expr, head: ast.expr) -> bool:
    """head is base with positional arguments appended to its call, or an attribute/subscript added."""
    if ast.dump(base) == ast.dump(head):
        return False
    if isinstance(head, (ast.Attribute, ast.Subscript)) and ast.dump(head.value) == ast.dump(base):
        return True
    if isinstance(base, ast.Call) and isinstance(head, ast.Call):
        if ast.dump(base.func) != ast.dump(head.func) or len(head.args) <= len(base.args):
            return False
        same_args = all(ast.dump(a) == ast.dump(b) for a, b in zip(base.args, head.args))
        same_kw = sorted(ast.dump(k) for k in base.keywords) == sorted(ast.dump(k) for k in head.keywords)
        return same_args and same_kw
    return False


def keeps_assertion(base_src: str, head_src: str) -> bool:
    """Whether the head's check `head_src` still checks what the base's `base_src` did."""
    base, head = _expr(base_src), _expr(head_src)
    if base is None or head is None:
        return False
    conjuncts = _conjuncts(head)
    if len(conjuncts) > 1 and base_src in conjuncts:
        return True
    if isinstance(base, ast.Compare) and isinstance(head, ast.Compare):
        same_expected = [type(o) for o in base.ops] == [type(o) for o in head.ops] and [ast.dump(c) for c in base.comparators] == [
            ast.dump(c) for c in head.comparators
        ]
        return same_expected and _subject_grew(base.left, head.left)
    return False


def expectation_changed(base_src: str, head_src: str) -> bool:
    """The head checks the same subject the same way against another expected value: `x == 5` →
    `x == 6`, `assertEqual(x, 5)` → `assertEqual(x, 6)`. Still a finding (an agent can rewrite an
    expectation to match its bug), reported as `expectation-changed` with both values so a reviewer
    sees at once what the test now expects."""
    base, head = _expr(base_src), _expr(head_src)
    if base is None or head is None or ast.dump(base) == ast.dump(head):
        return False
    if isinstance(base, ast.Compare) and isinstance(head, ast.Compare):
        return ast.dump(base.left) == ast.dump(head.left) and [type(o) for o in base.ops] == [type(o) for o in head.ops]
    if isinstance(base, ast.Call) and isinstance(head, ast.Call) and len(base.args) >= 2 and len(head.args) == len(base.args):
        same = ast.dump(base.func) == ast.dump(head.func) and ast.dump(base.args[0]) == ast.dump(head.args[0])
        return same and sorted(ast.dump(k) for k in base.keywords) == sorted(ast.dump(k) for k in head.keywords)
    return False


def _subject(node: ast.expr) -> str | None:
    """What a check is about: the function a check call calls, or a comparison's left side (its
    function when it is a call); None for anything else."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _subject(node.operand)
    if isinstance(node, ast.Call):
        return "call " + ast.dump(node.func)
    if isinstance(node, ast.Compare):
        return _subject(node.left) if isinstance(node.left, ast.Call) else "compare " + ast.dump(node.left)
    return None


def same_subject(base_src: str, head_src: str) -> bool:
    """The head's check calls the same check function, or compares the same subject (the same call
    or expression on the left), as the base's: not the same check, but the one in its place, which
    a finding quotes rather than calling the base's check gone."""
    base, head = _expr(base_src), _expr(head_src)
    if base is None or head is None:
        return False
    subject = _subject(base)
    return subject is not None and subject == _subject(head)


def bound_to_base_value(base_src: str, head_src: str, calls: list[dict[str, str]]) -> bool:
    """The head's check is a helper's `X == n` where `n` is one of the helper's parameters, and every
    call of the helper from the test passes the base's expected value for it (literally, or through a
    name the test assigns that literal once): the check was generalised, not changed (vLLM 0.16.0's
    `len(req.block_hashes) == 3` became `== num_full_blocks` with `num_full_blocks = 3`)."""
    base, head = _expr(base_src), _expr(head_src)
    if not (isinstance(base, ast.Compare) and isinstance(head, ast.Compare) and len(head.comparators) == 1 and len(base.comparators) == 1):
        return False
    name = head.comparators[0]
    if not isinstance(name, ast.Name) or not calls:
        return False
    want = ast.dump(base.comparators[0])
    for bound in calls:
        got = _expr(bound.get(name.id, ""))
        if got is None or ast.dump(got) != want:
            return False
    return True


def argnames(names_src: str) -> list[str] | None:
    """`"a,b"`, `("a", "b")` or `["a", "b"]` as a list of names; None when not literal."""
    node = _expr(names_src)
    try:
        v = ast.literal_eval(node) if node is not None else None
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
    if isinstance(v, str):
        return [n.strip() for n in v.split(",") if n.strip()]
    if isinstance(v, (list, tuple)) and all(isinstance(n, str) for n in v):
        return list(v)
    return None


def case_values(case_src: str, n: int) -> list[str] | None:
    """A case's value texts, one per argument name (pytest.param(...) unwrapped)."""
    node = _expr(case_src)
    if node is None:
        return None
    if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("param"):
        elts = node.args
        return [ast.unparse(e) for e in elts] if n > 1 and len(elts) == n else ([ast.unparse(elts[0])] if n == 1 and elts else None)
    if n == 1:
        return [ast.unparse(node)]
    if isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) == n:
        return [ast.unparse(e) for e in node.elts]
    return None


def projected_cases(head_names: list[str], head_cases: list[str]) -> list[dict[str, str]] | None:
    """Each head case as {name: value text}; None when a case cannot be read."""
    out = []
    for c in head_cases:
        vals = case_values(c, len(head_names))
        if vals is None:
            return None
        out.append(dict(zip(head_names, vals)))
    return out


def extension_keeps(base_names_src: str, base_cases: list[str], head_names_src: str, head_cases: list[str]) -> bool:
    """Whether a head parametrization over more names still has every base case."""
    b, h = argnames(base_names_src), argnames(head_names_src)
    if not b or not h or not set(b) < set(h):
        return False
    cases = projected_cases(h, head_cases)
    if cases is None:
        return False
    have = {tuple(c[n] for n in b) for c in cases}
    for bc in base_cases:
        vals = case_values(bc, len(b))
        if vals is None or tuple(vals) not in have:
            return False
    return True


_ALLOWED = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.Compare, ast.Name, ast.Load, ast.Constant,
            ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn, ast.Tuple, ast.List)


def skip_spares_base_cases(cond_src: str, base_params: list[tuple[str, list[str]]], head_params: list[tuple[str, list[str]]]) -> bool:
    """Whether a skip under `if cond_src:` can hit no case the base had: the condition reads only
    parametrized names and literals, and is false for every head case that projects onto a base case."""
    tree = _expr(cond_src)
    if tree is None or not all(isinstance(n, _ALLOWED) for n in ast.walk(ast.Expression(body=tree))):
        return False
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for hn_src, hcases in head_params:
        hn = argnames(hn_src)
        if not hn or not names <= set(hn):
            continue
        base = next(((argnames(bn) or [], bc) for bn, bc in base_params if set(argnames(bn) or []) <= set(hn)), None)
        if base is None or not base[0]:
            return False
        bnames, bcases = base
        want = {tuple(v) for c in bcases if (v := case_values(c, len(bnames))) is not None}
        cases = projected_cases(hn, hcases)
        if cases is None:
            return False
        code = compile(ast.Expression(body=tree), "<skip condition>", "eval")
        for c in cases:
            if tuple(c[n] for n in bnames) not in want:
                continue
            try:
                env = {n: ast.literal_eval(c[n]) for n in names}
                if eval(code, {"__builtins__": {}}, env):  # noqa: S307 - only names, literals and comparisons (checked above)
                    return False
            except Exception:  # a value that is not a literal: cannot tell, so it counts as a skip
                return False
        return True
    return False
