"""What a generated repository gate's probe reads of the two trees without running them: the paths
the PR changed (files that differ between the base tree and the head's), the tests a task's
`official.select.fromPaths` maps them to (globs as the engine matches them: `**` spans folders, `*`
and `?` stay within one, `{a,b}` alternates, a leading `!` excludes), and each gated module's public
functions and classes with their parameters (parsed with `ast`, never imported)."""
from __future__ import annotations

import ast
import functools
import os
import re

_SKIP = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".tox", "node_modules"}


def _segment(seg: str) -> str:
    out, i = "", 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "{" and "}" in seg[i:]:
            j = seg.index("}", i)
            out += "(?:" + "|".join(_segment(p) for p in seg[i + 1:j].split(",")) + ")"
            i = j
        elif c == "[" and "]" in seg[i + 1:]:
            j = seg.index("]", i + 1)
            out += "[" + seg[i + 1:j].replace("!", "^", 1) + "]"
            i = j
        else:
            out += re.escape(c)
        i += 1
    return out


@functools.lru_cache(maxsize=None)
def glob_regex(glob: str):
    segs = glob.strip("/").split("/")
    out = ""
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        if seg == "**":
            out += ".*" if last else "(?:[^/]+/)*"
        else:
            out += _segment(seg) + ("" if last else "/")
    return re.compile("^" + out + "$")


# pytest's default test files and conftest.py: never a gated module, whatever the globs match
TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test|conftest)\.py$")


def matches(globs, path: str) -> bool:
    """Whether `path` matches one of `globs` and none of its `!` exclusions."""
    inc = [g for g in globs if not g.startswith("!")]
    exc = [g[1:] for g in globs if g.startswith("!")]
    return any(glob_regex(g).match(path) for g in inc) and not any(glob_regex(g).match(path) for g in exc)


def files(tree: str) -> dict:
    """relative path -> absolute path of every file of `tree` (caches and version control left out)."""
    out = {}
    for root, dirs, names in os.walk(tree):
        dirs[:] = [d for d in dirs if d not in _SKIP]
        for n in names:
            full = os.path.join(root, n)
            out[os.path.relpath(full, tree).replace(os.sep, "/")] = full
    return out


def _same(a: str, b: str) -> bool:
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def changed_paths(base: str, head: str, globs) -> list:
    """Paths matching `globs` that the head added, removed or changed against the base."""
    fb, fh = files(base), files(head)
    out = []
    for p in sorted(set(fb) | set(fh)):
        if not matches(globs, p):
            continue
        if p not in fb or p not in fh or not _same(fb[p], fh[p]):
            out.append(p)
    return out


def selected_tests(selection, changed) -> tuple:
    """(test files, why) of the fromPaths entries a changed path matches; every entry's when none does."""
    picked, why = [], {}
    for entry in selection:
        hit = next((p for p in changed if matches(entry["paths"], p)), None)
        if hit is None:
            continue
        for t in entry["tests"]:
            if t not in why:
                picked.append(t)
                why[t] = f"changed {hit}"
    if picked:
        return picked, why
    every = [t for e in selection for t in e["tests"]]
    every = list(dict.fromkeys(every))
    return every, {t: "no gated path changed: every mapped test" for t in every}


def _params(fn):
    """(positional names, keyword-only names, *args, **kwargs) of a def, without self/cls."""
    a = fn.args
    pos = [p.arg for p in getattr(a, "posonlyargs", [])] + [p.arg for p in a.args]
    if pos and pos[0] in ("self", "cls"):
        pos = pos[1:]
    return (pos, [p.arg for p in a.kwonlyargs], a.vararg is not None, a.kwarg is not None)


def public_interface(path: str) -> dict:
    """name -> (line, parameter names) of the module's public top-level functions and classes (a class: its
    __init__'s parameters, and `Class.method` for each public method). None when the file does not parse."""
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (SyntaxError, ValueError, OSError):
        return None
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            out[node.name] = (node.lineno, _params(node))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            init = next((n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__init__"), None)
            out[node.name] = (node.lineno, _params(init) if init else None)
            for n in node.body:
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_"):
                    out[f"{node.name}.{n.name}"] = (n.lineno, _params(n))
    return out


def interface_changes(base, head):
    """Why a callable of the base no longer takes what its callers pass it, or None: the base's
    positional parameters keep their places, and every parameter name is still accepted."""
    if base is None or head is None:
        return None
    (bpos, bkw, _, _), (hpos, hkw, hvar, hvarkw) = base, head
    moved = [p for i, p in enumerate(bpos) if i >= len(hpos) or hpos[i] != p]
    if moved and not (hvar and all(p in hkw or hvarkw for p in moved)):
        return f"positional parameters ({', '.join(bpos)}) are now ({', '.join(hpos)})"
    gone = [p for p in bkw if p not in hkw and p not in hpos and not hvarkw]
    if gone:
        return f"keyword parameter{'s' if len(gone) > 1 else ''} {', '.join(gone)} gone"
    return None


def spread(nodeids, limit):
    """At most `limit` of `nodeids`, in collection order, chosen to cover the most: one test of each file
    in turn (round-robin), each test function once (its first parametrization) before a second case of
    any, then the rest. The first `limit` in collection order would often be one file's or one function's
    parametrizations alone (torchsnapshot: 24 cases of tests/test_manifest.py, none of the tests of the
    module a PR changed)."""
    if len(nodeids) <= limit:
        return list(nodeids)
    files, seen = {}, set()
    first, rest = {}, {}
    for i, nodeid in enumerate(nodeids):
        file, _, name = nodeid.partition("::")
        function = (file, name.split("[", 1)[0])
        files.setdefault(file, None)
        (rest if function in seen else first).setdefault(file, []).append(i)
        seen.add(function)
    picked = []
    for queues in (first, rest):
        queues = [list(queues.get(f, ())) for f in files]
        while len(picked) < limit and any(queues):
            for q in queues:
                if q and len(picked) < limit:
                    picked.append(q.pop(0))
    return [nodeids[i] for i in sorted(picked)]
