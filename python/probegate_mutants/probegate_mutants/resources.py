"""Mutants that keep every value and cost time, memory or traffic: the regressions a repository
gate's time, memory and traffic checks exist for, which value-changing operators never make.

They are for repository gates (`validate --mutants` on a gate mutates whole files of the gated
subsystem, `"set": "gate"` in the generator's request), not for an assignment's reference change,
whose probe scores were measured without them. Each rewrite leaves what a function returns
bitwise unchanged: only a time, memory or traffic check can kill it.

The rewrites name nothing of the mutated module (torch through `__import__`, state in the
module's own `globals()`), so they compile and run in any file.
"""

from cosmic_ray.operators.operator import Example, Operator
from .fragments import called_name, expression, only_statement
from .operators import COLLECTIVES, append_statement

_TORCH = '__import__("torch")'


def _returned(node):
    """`return <expr>` whose expression is not a constant (None, a number, a string)."""
    if node.type != "return_stmt" or len(node.children) != 2:
        return None
    value = node.children[1]
    if value.type in ("number", "string", "keyword") or value.get_code(include_prefix=False) in ("None", "True", "False"):
        return None
    return value


def _does_work(value):
    """Whether the expression calls something or indexes/operates (a bare name or attribute costs nothing twice)."""
    code = value.get_code(include_prefix=False)
    return value.type not in ("name",) and ("(" in code or any(c in code for c in "+-*/@[")) and not code.startswith("lambda")


class _ReturnRewrite(Operator):
    """Rewrites `return X` into `return <TEMPLATE with X>`, X evaluated where the template says."""

    TEMPLATE = "{x}"
    WORK_ONLY = False

    def mutation_positions(self, node):
        value = _returned(node)
        if value is not None and (not self.WORK_ONLY or _does_work(value)):
            yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        x = node.children[1].get_code(include_prefix=False)
        node.children[1] = expression(self.TEMPLATE.format(x=x, torch=_TORCH), " ")
        node.children[1].parent = node
        return node


class ExtraPass(_ReturnRewrite):
    """The returned expression computed twice, the first result thrown away: an extra pass over the data."""

    TEMPLATE = "((({x})), ({x}))[1]"
    WORK_ONLY = True

    @classmethod
    def examples(cls):
        return (Example("def f(a):\n    return a * 2\n", "def f(a):\n    return (((a * 2)), (a * 2))[1]\n"),
                Example("def f(a):\n    return a\n", "def f(a):\n    return a\n"))


# The tensors of a returned value: itself, or those of a returned tuple (`return advantages, returns`).
_TENSORS = "(_pg_t for _pg_t in (_pg_r if isinstance(_pg_r, tuple) else (_pg_r,)) if isinstance(_pg_t, {torch}.Tensor))"


class ElementLoop(_ReturnRewrite):
    """A Python loop over every element of the returned tensors before they are returned: per-element
    work where the base did one kernel, in proportion to the data (the values are returned unchanged)."""

    TEMPLATE = ("(lambda _pg_r: ([float(_pg_v) for _pg_t in " + _TENSORS + " if not _pg_t.is_complex() "
                "for _pg_v in _pg_t.detach().flatten().tolist()], _pg_r)[1])(({x}))")

    @classmethod
    def examples(cls):
        pre = "def f(a):\n    return a.sum(0)\n"
        return (Example(pre, "def f(a):\n    return " + cls.TEMPLATE.format(x="a.sum(0)", torch=_TORCH) + "\n"),)


class GrowingCache(_ReturnRewrite):
    """Every returned value kept in a module-level list that nothing empties: a cache that grows each call."""

    TEMPLATE = '(lambda _pg_r: (globals().setdefault("_probegate_kept", []).append(_pg_r), _pg_r)[1])(({x}))'

    @classmethod
    def examples(cls):
        return (Example("def f(a):\n    return a + 1\n", "def f(a):\n    return " + cls.TEMPLATE.format(x="a + 1") + "\n"),)


class RetainCopies(_ReturnRewrite):
    """Four copies of each returned tensor kept alive until the next call: a higher peak that does not grow."""

    TEMPLATE = ('(lambda _pg_r: (globals().__setitem__("_probegate_scratch", [_pg_t.detach().clone() for _pg_t in ' + _TENSORS
                + ' for _ in range(4)]), _pg_r)[1])(({x}))')

    @classmethod
    def examples(cls):
        return (Example("def f(a):\n    return a + 1\n", "def f(a):\n    return " + cls.TEMPLATE.format(x="a + 1", torch=_TORCH) + "\n"),)


class ExtraCollective(Operator):
    """A barrier after a collective: values unchanged, one more collective per call on every rank."""

    def mutation_positions(self, node):
        stmt = only_statement(node)
        if stmt is not None and called_name(stmt) in COLLECTIVES and called_name(stmt) != "barrier":
            yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        return append_statement(node, f"{_TORCH}.distributed.barrier()")

    @classmethod
    def examples(cls):
        return (Example("def f(t):\n    dist.all_reduce(t)\n", f"def f(t):\n    dist.all_reduce(t); {_TORCH}.distributed.barrier()\n"),
                Example("def f(t):\n    dist.barrier()\n", "def f(t):\n    dist.barrier()\n"))


RESOURCE_OPERATORS = (ExtraPass, ElementLoop, GrowingCache, RetainCopies, ExtraCollective)
