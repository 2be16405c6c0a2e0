"""probegate's mutation operators, in cosmic-ray's Operator interface (mutation_positions, mutate,
examples), registered as the `probegate` operator provider (entry point
`cosmic_ray.operator_providers`). Two general ones cosmic-ray lacks (return value, statement
removal) and the domain ones: flaws a reviewer of distributed-training code looks for."""

from cosmic_ray.operators.operator import Example, Operator
from parso.python.tree import Operator as Op

from .fragments import called_name, dotted_name, expression, only_statement, pass_statement

# torch.distributed collectives (and the point-to-point calls a pipeline stage uses).
COLLECTIVES = frozenset(
    "all_reduce all_gather all_gather_into_tensor all_gather_object reduce_scatter reduce_scatter_tensor "
    "broadcast broadcast_object_list reduce all_to_all all_to_all_single gather scatter barrier send recv isend irecv".split()
)
# ReduceOp.X → what it may wrongly be instead.
REDUCE_OPS = {"SUM": ("AVG", "MAX"), "AVG": ("SUM",), "MAX": ("MIN", "SUM"), "MIN": ("MAX",), "PRODUCT": ("SUM",)}
# torch.<dtype> → a plausible wrong precision.
DTYPES = {
    "float32": ("bfloat16", "float16"),
    "float": ("bfloat16",),
    "bfloat16": ("float32", "float16"),
    "float16": ("float32", "bfloat16"),
    "half": ("float32",),
    "float64": ("float32",),
    "double": ("float32",),
}
# Statements whose removal is not a behavioural flaw (or cannot parse): imports, declarations, pass.
KEEP_TYPES = frozenset(("import_name", "import_from", "global_stmt", "nonlocal_stmt", "pass_stmt", "keyword"))


class ReplaceReturnValue(Operator):
    """`return <expr>` → `return None`: a function that computes the right thing and hands back nothing."""

    def mutation_positions(self, node):
        if node.type == "return_stmt" and len(node.children) == 2 and node.children[1].get_code(include_prefix=False) != "None":
            yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        node.children[1] = expression("None", " ")
        node.children[1].parent = node
        return node

    @classmethod
    def examples(cls):
        return (Example("def f():\n    return x + 1\n", "def f():\n    return None\n"), Example("def f():\n    return None\n", "def f():\n    return None\n"))


class RemoveStatement(Operator):
    """An expression statement or assignment → `pass`: a step of the change that is left out."""

    def mutation_positions(self, node):
        stmt = only_statement(node)
        if stmt is None or stmt.type in KEEP_TYPES or stmt.type == "string":
            return
        yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        stmt = node.children[0]
        node.children[0] = pass_statement(stmt.get_first_leaf().prefix)
        node.children[0].parent = node
        return node

    @classmethod
    def examples(cls):
        return (Example("x = 1\ny = 2\n", "pass\ny = 2\n"), Example("x = 1\ny = 2\n", "x = 1\npass\n", occurrence=1))


def append_statement(node, code):
    """`stmt` → `stmt; <code>` on the same line (a simple_stmt gets one more statement)."""
    extra = expression(code, " ")
    semi = Op(";", (0, 0), prefix="")
    node.children[1:1] = [semi, extra]
    for child in (semi, extra):
        child.parent = node
    return node


class _CollectiveStatement(Operator):
    """A statement that is only a call of a collective (`dist.all_reduce(t)`)."""

    def mutation_positions(self, node):
        stmt = only_statement(node)
        if stmt is not None and called_name(stmt) in COLLECTIVES:
            yield (node.start_pos, node.end_pos)


class RemoveCollective(_CollectiveStatement):
    """Drops a collective call: ranks that never exchange what they must agree on."""

    def mutate(self, node, index):
        node.children[0] = pass_statement(node.children[0].get_first_leaf().prefix)
        node.children[0].parent = node
        return node

    @classmethod
    def examples(cls):
        return (Example("def f(t):\n    dist.all_reduce(t)\n    return t\n", "def f(t):\n    pass\n    return t\n"),)


class DuplicateCollective(_CollectiveStatement):
    """Calls a collective twice: a sum summed again, a broadcast repeated (and ranks out of step)."""

    def mutate(self, node, index):
        return append_statement(node, node.children[0].get_code(include_prefix=False))

    @classmethod
    def examples(cls):
        return (Example("def f(t):\n    dist.all_reduce(t)\n", "def f(t):\n    dist.all_reduce(t); dist.all_reduce(t)\n"),)


class ReplaceReduceOp(Operator):
    """`ReduceOp.SUM` ↔ `AVG`/`MAX`, `MAX` ↔ `MIN`: the wrong reduction."""

    def mutation_positions(self, node):
        if dotted_name(node) == "ReduceOp" and node.value in REDUCE_OPS:
            for _ in REDUCE_OPS[node.value]:
                yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        node.value = REDUCE_OPS[node.value][index]
        return node

    @classmethod
    def examples(cls):
        return (
            Example("dist.all_reduce(t, op=dist.ReduceOp.SUM)", "dist.all_reduce(t, op=dist.ReduceOp.AVG)"),
            Example("dist.all_reduce(t, op=dist.ReduceOp.SUM)", "dist.all_reduce(t, op=dist.ReduceOp.MAX)", occurrence=1),
        )


class _DropMethodCall(Operator):
    """Removes a `.name(…)` step from a call chain: `x.clone()` → `x`."""

    method = ""

    def _steps(self, node):
        if node.type not in ("atom_expr", "power"):
            return []
        kids = node.children
        return [
            i
            for i in range(1, len(kids) - 1)
            if kids[i].type == "trailer" and kids[i].children[0].value == "." and kids[i].children[1].value == self.method
            and kids[i + 1].type == "trailer" and kids[i + 1].children[0].value == "("
        ]

    def mutation_positions(self, node):
        for i in self._steps(node):
            yield (node.children[i].start_pos, node.children[i + 1].end_pos)

    def mutate(self, node, index):
        i = self._steps(node)[index]
        del node.children[i : i + 2]
        if len(node.children) == 1:
            only = node.children[0]
            only.parent = node.parent
            return only
        return node


class DropClone(_DropMethodCall):
    """`t.clone()` → `t`: a buffer shared where a private copy was needed."""

    method = "clone"

    @classmethod
    def examples(cls):
        return (Example("y = x.detach().clone()", "y = x.detach()"), Example("y = x.clone()", "y = x"))


class DropCopy(_DropMethodCall):
    """`dst.copy_(src)` → `dst`: an in-place copy that never happens."""

    method = "copy_"

    @classmethod
    def examples(cls):
        return (Example("p.data.copy_(new)\n", "p.data\n"),)


class ReplaceDtype(Operator):
    """`torch.float32` ↔ `torch.bfloat16`/`float16`: state kept at the wrong precision."""

    def mutation_positions(self, node):
        if dotted_name(node) == "torch" and node.value in DTYPES:
            for _ in DTYPES[node.value]:
                yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        node.value = DTYPES[node.value][index]
        return node

    @classmethod
    def examples(cls):
        return (Example("x.to(torch.float32)", "x.to(torch.bfloat16)"), Example("x.to(torch.float32)", "x.to(torch.float16)", occurrence=1))


from .state_and_args import DropStateDictKey, SwapArguments  # noqa: E402  (the last two of OPERATORS)


OPERATORS = (
    ReplaceReturnValue,
    RemoveStatement,
    RemoveCollective,
    DuplicateCollective,
    ReplaceReduceOp,
    DropClone,
    DropCopy,
    ReplaceDtype,
    DropStateDictKey,
    SwapArguments,
)
