"""Building replacement parso nodes from source text (cosmic-ray's operators edit parso trees)."""

import parso
from parso.python.tree import Keyword


def expression(code, prefix):
    """The parso node of one expression `code`, its first leaf carrying `prefix` (the replaced
    node's whitespace and comments, so the edit keeps the line's layout)."""
    module = parso.parse(code)
    stmt = module.children[0]
    node = stmt.children[0] if stmt.type == "simple_stmt" else stmt
    node.get_first_leaf().prefix = prefix
    return node


def dotted_name(node):
    """The leaf value before a `.name` trailer's dot, e.g. 'ReduceOp' for the `SUM` of
    `dist.ReduceOp.SUM` (None when `node` is not the name of a trailer)."""
    if node.type != "name" or node.parent is None or node.parent.type != "trailer":
        return None
    dot = node.get_previous_leaf()
    if dot is None or dot.value != ".":
        return None
    owner = dot.get_previous_leaf()
    return owner.value if owner is not None and owner.type == "name" else None


def called_name(node):
    """For a call expression (`atom_expr`/`power` ending in a `( … )` trailer), the name called:
    `all_reduce` for `dist.all_reduce(t)`; None for anything else."""
    if node.type not in ("atom_expr", "power") or len(node.children) < 2:
        return None
    last = node.children[-1]
    if last.type != "trailer" or last.children[0].value != "(":
        return None
    before = node.children[-2]
    if before.type == "trailer" and before.children[0].value == ".":
        return before.children[1].value
    if before.type == "name":
        return before.value
    return None


def enclosing_function(node):
    """The name of the innermost function `node` is in, or None at module level."""
    parent = node.parent
    while parent is not None:
        if parent.type == "funcdef":
            return parent.name.value
        parent = parent.parent
    return None


def pass_statement(prefix):
    """A `pass` keyword that keeps the replaced statement's whitespace and comments."""
    return Keyword("pass", (0, 0), prefix=prefix)


def only_statement(node):
    """The one statement of a `simple_stmt` (None when it holds several, `a; b`)."""
    return node.children[0] if node.type == "simple_stmt" and len(node.children) == 2 else None
