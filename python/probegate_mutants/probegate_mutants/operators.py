"""probegate's mutation operators, in cosmic-ray's Operator interface (mutation_positions, mutate,
examples), registered as the `probegate` operator provider (entry point
`cosmic_ray.operator_providers`). Two general ones cosmic-ray lacks (return value, statement
removal) and the domain ones: flaws a reviewer of distributed-training code looks for."""

from cosmic_ray.operators.operator import Example, Operator
from parso.python.tree import Keyword, Operator as Op

from .fragments import called_name, dotted_name, enclosing_function, expression

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


def _pass(prefix):
    return Keyword("pass", (0, 0), prefix=prefix)


def _only_statement(node):
    """The one statement of a `simple_stmt` (None when it holds several, `a; b`)."""
    return node.children[0] if node.type == "simple_stmt" and len(node.children) == 2 else None


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
        stmt = _only_statement(node)
        if stmt is None or stmt.type in KEEP_TYPES or stmt.type == "string":
            return
        yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        stmt = node.children[0]
        node.children[0] = _pass(stmt.get_first_leaf().prefix)
        node.children[0].parent = node
        return node

    @classmethod
    def examples(cls):
        return (Example("x = 1\ny = 2\n", "pass\ny = 2\n"), Example("x = 1\ny = 2\n", "x = 1\npass\n", occurrence=1))


class _CollectiveStatement(Operator):
    """A statement that is only a call of a collective (`dist.all_reduce(t)`)."""

    def mutation_positions(self, node):
        stmt = _only_statement(node)
        if stmt is not None and called_name(stmt) in COLLECTIVES:
            yield (node.start_pos, node.end_pos)


class RemoveCollective(_CollectiveStatement):
    """Drops a collective call: ranks that never exchange what they must agree on."""

    def mutate(self, node, index):
        node.children[0] = _pass(node.children[0].get_first_leaf().prefix)
        node.children[0].parent = node
        return node

    @classmethod
    def examples(cls):
        return (Example("def f(t):\n    dist.all_reduce(t)\n    return t\n", "def f(t):\n    pass\n    return t\n"),)


class DuplicateCollective(_CollectiveStatement):
    """Calls a collective twice: a sum summed again, a broadcast repeated (and ranks out of step)."""

    def mutate(self, node, index):
        call = node.children[0]
        again = expression(call.get_code(include_prefix=False), " ")
        semi = Op(";", (0, 0), prefix="")
        node.children[1:1] = [semi, again]
        for child in (semi, again):
            child.parent = node
        return node

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


def _dict_entries(maker):
    """The entries of a `dictorsetmaker` node as lists of children, split at its commas."""
    entries, current = [], []
    for child in maker.children:
        if child.type == "operator" and child.value == ",":
            entries.append(current)
            current = []
        else:
            current.append(child)
    if current:
        entries.append(current)
    return entries


class DropStateDictKey(Operator):
    """In a method named `state_dict`: one entry left out of a dict literal, or one
    `sd[key] = …` assignment removed — state a checkpoint silently loses."""

    @staticmethod
    def _maker(node):
        if node.type == "atom" and len(node.children) == 3 and node.children[0].value == "{" and node.children[1].type == "dictorsetmaker":
            maker = node.children[1]
            if any(c.type == "operator" and c.value == ":" for c in maker.children) or any(c.type == "operator" and c.value == "**" for c in maker.children):
                return maker
        return None

    def mutation_positions(self, node):
        if enclosing_function(node) != "state_dict":
            return
        maker = self._maker(node)
        if maker is not None:
            for entry in _dict_entries(maker):
                yield (entry[0].start_pos, entry[-1].end_pos)
            return
        stmt = _only_statement(node)
        if stmt is not None and stmt.type == "expr_stmt" and len(stmt.children) == 3 and stmt.children[1].value == "=":
            target = stmt.children[0]
            if target.type in ("atom_expr", "power") and target.children[-1].type == "trailer" and target.children[-1].children[0].value == "[":
                yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        maker = self._maker(node)
        if maker is None:
            node.children[0] = _pass(node.children[0].get_first_leaf().prefix)
            node.children[0].parent = node
            return node
        entries = _dict_entries(maker)
        kept = [e for i, e in enumerate(entries) if i != index]
        children = []
        for i, entry in enumerate(kept):
            if i:
                children.append(Op(",", (0, 0), prefix=""))
            if i == 0 and entry:
                entry[0].get_first_leaf().prefix = entries[0][0].get_first_leaf().prefix
            children.extend(entry)
        maker.children = children
        for child in children:
            child.parent = maker
        return node

    @classmethod
    def examples(cls):
        return (
            Example("def state_dict(self):\n    return {'a': self.a, 'b': self.b}\n", "def state_dict(self):\n    return {'b': self.b}\n"),
            Example("def state_dict(self):\n    return {'a': self.a, 'b': self.b}\n", "def state_dict(self):\n    return {'a': self.a}\n", occurrence=1),
            Example("def state_dict(self):\n    sd = {}\n    sd['a'] = self.a\n    return sd\n", "def state_dict(self):\n    sd = {}\n    pass\n    return sd\n"),
            Example("def load(self):\n    return {'a': self.a, 'b': self.b}\n", "def load(self):\n    return {'a': self.a, 'b': self.b}\n"),
        )


def _kind(node):
    """The syntactic kind of an argument, standing in for its type: two arguments of one kind
    (two names, two numbers, two strings, two attribute chains) may be swapped and still run."""
    if node.type == "name":
        return "name"
    if node.type == "number":
        return "number"
    if node.type in ("string", "strings"):
        return "string"
    if node.type in ("atom_expr", "power") and all(t.type == "trailer" and t.children[0].value == "." for t in node.children[1:]):
        return "attribute"
    return None


# Calls whose arguments commute: swapping them makes an equivalent mutant, never a flaw.
COMMUTATIVE = frozenset(("max", "min", "maximum", "minimum"))


def _callee(trailer):
    """The name a `( … )` trailer calls: `min` of `min(a, b)`, `maximum` of `torch.maximum(a, b)`."""
    before = trailer.get_previous_sibling()
    if before is None:
        return None
    if before.type == "name":
        return before.value
    if before.type == "trailer" and before.children[0].value == ".":
        return before.children[1].value
    return None


class SwapArguments(Operator):
    """Two neighbouring positional arguments of one kind swapped at a call: `f(src, dst)` → `f(dst, src)`.
    Calls whose arguments commute (`max`, `min`, …) are left alone."""

    @staticmethod
    def _pairs(node):
        if node.type != "trailer" or node.children[0].value != "(" or len(node.children) != 3 or node.children[1].type != "arglist":
            return []
        if _callee(node) in COMMUTATIVE:
            return []
        args = [c for c in node.children[1].children if not (c.type == "operator" and c.value == ",")]
        pairs = []
        for i in range(len(args) - 1):
            a, b = args[i], args[i + 1]
            if a.type == "argument" or b.type == "argument":
                break
            kind = _kind(a)
            if kind is not None and kind == _kind(b) and a.get_code(include_prefix=False) != b.get_code(include_prefix=False):
                pairs.append((a, b))
        return pairs

    def mutation_positions(self, node):
        for a, b in self._pairs(node):
            yield (a.start_pos, b.end_pos)

    def mutate(self, node, index):
        a, b = self._pairs(node)[index]
        kids = node.children[1].children
        ia, ib = kids.index(a), kids.index(b)
        pa, pb = a.get_first_leaf().prefix, b.get_first_leaf().prefix
        kids[ia], kids[ib] = b, a
        b.get_first_leaf().prefix, a.get_first_leaf().prefix = pa, pb
        return node

    @classmethod
    def examples(cls):
        return (
            Example("dist.send(tensor, peer)", "dist.send(peer, tensor)"),
            Example("f(a, 1, b)", "f(a, 1, b)"),
            Example("torch.add(x, y, alpha=2)", "torch.add(y, x, alpha=2)"),
            Example("lo = max(start, offset)", "lo = max(start, offset)"),
            Example("lo = torch.minimum(a, b)", "lo = torch.minimum(a, b)"),
        )


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
