"""The domain operators that read a call's or a method's structure rather than one token: a key a
`state_dict` loses, and two arguments of one kind swapped at a call."""

from cosmic_ray.operators.operator import Example, Operator
from parso.python.tree import Operator as Op

from .fragments import enclosing_function, only_statement, pass_statement


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
        stmt = only_statement(node)
        if stmt is not None and stmt.type == "expr_stmt" and len(stmt.children) == 3 and stmt.children[1].value == "=":
            target = stmt.children[0]
            if target.type in ("atom_expr", "power") and target.children[-1].type == "trailer" and target.children[-1].children[0].value == "[":
                yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        maker = self._maker(node)
        if maker is None:
            node.children[0] = pass_statement(node.children[0].get_first_leaf().prefix)
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
