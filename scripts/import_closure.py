"""Static import closure of Python files inside one source tree (used by `probegate task import --trace-imports`).

Reads files with `ast`, never imports or runs them: the tree is untrusted and may not even import on this
machine. Every `import`/`from … import` (run at import time: module and class
bodies, try/except and if branches alike, so the closure errs on the side of keeping a file;
not function bodies) that resolves to a file under the root is followed, with
each package's `__init__.py` on the way. Prints the files found, relative to the root, one a line.

usage: import_closure.py <root> <entry file>...   (entries relative to the root)
"""
import ast
import os
import sys


def module_file(root, dotted):
    """The file under root that module `dotted` lives in (package __init__ or module), or None."""
    base = os.path.join(root, *dotted.split("."))
    for cand in (os.path.join(base, "__init__.py"), base + ".py"):
        if os.path.isfile(cand):
            return cand
    return None


def package_of(root, path):
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    return rel[:-1] if rel[-1] == "__init__" else rel[:-1]


def walk_import_time(tree):
    """Nodes that run when the module is imported: not function bodies (a lazy import there runs
    only if the function is called; add such modules with --keep)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                todo.append(child)


def imported_modules(root, path):
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (SyntaxError, UnicodeDecodeError, OSError) as e:
        print(f"import_closure: skipped {os.path.relpath(path, root)}: {e}", file=sys.stderr)
        return
    pkg = package_of(root, path)
    for node in walk_import_time(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
                head = ".".join(parts + ([node.module] if node.module else []))
            else:
                head = node.module or ""
            if head:
                yield head
            for a in node.names:
                if a.name != "*":
                    yield f"{head}.{a.name}" if head else a.name


def closure(root, entries):
    seen, todo = set(), [os.path.join(root, e) for e in entries]
    while todo:
        path = os.path.normpath(todo.pop())
        if path in seen or not os.path.isfile(path):
            continue
        seen.add(path)
        if not path.endswith(".py"):
            continue
        for dotted in imported_modules(root, path):
            parts = dotted.split(".")
            # Each package on the way is imported too (its __init__ runs).
            for i in range(1, len(parts) + 1):
                f = module_file(root, ".".join(parts[:i]))
                if f and os.path.normpath(f) not in seen:
                    todo.append(f)
    return sorted(os.path.relpath(p, root) for p in seen)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: import_closure.py <root> <entry file>...")
    for p in closure(sys.argv[1], sys.argv[2:]):
        print(p)
