"""The files of one tree as the guard reads constants from them: a test's `from tests.constants
import X` or `from .common import X` is looked up in the tree's own files (parsed, never imported;
a file reached through a link out of the tree, or over 4 MiB, is not read).
"""
from __future__ import annotations

import ast
import os

from .values import FileValues, Read

MAX_BYTES = 4 * 1024 * 1024


class Tree:
    """The files of one tree, each parsed at most once; `root` None: no file but the test's own."""

    def __init__(self, root: str | None):
        self.root = os.path.realpath(root) if root else None
        self._files: dict[str, FileValues | None] = {}

    def add(self, path: str, module: ast.Module, source: str) -> FileValues:
        self._files[path] = FileValues(self, path, module, source)
        return self._files[path]

    def file(self, rel: str) -> FileValues | None:
        if rel not in self._files:
            self._files[rel] = None
            source = self._read(rel)
            if source is not None:
                try:
                    self._files[rel] = FileValues(self, rel, ast.parse(source, filename=rel), source)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    pass
        return self._files[rel]

    def _read(self, rel: str) -> str | None:
        if self.root is None:
            return None
        p = os.path.realpath(os.path.join(self.root, rel))
        if not p.startswith(self.root + os.sep) or not os.path.isfile(p) or os.path.getsize(p) > MAX_BYTES:
            return None  # a link out of the tree is not read
        with open(p, encoding="utf-8", errors="replace") as f:
            return f.read()

    def _module_files(self, from_path: str, level: int, module: str) -> list[str]:
        """The files of the tree that `module` can be, imported from `from_path`."""
        rel_mod = module.replace(".", "/")
        if level:
            parts = from_path.split("/")[:-1]
            if level - 1 > len(parts):
                return []
            bases = ["/".join(parts[: len(parts) - (level - 1)])]
        else:  # the root, src/, and each folder above the file (pytest's rootdir-relative imports)
            parts = from_path.split("/")[:-1]
            bases = ["", "src"] + ["/".join(parts[:i]) for i in range(len(parts), 0, -1)]
        out = []
        for base in dict.fromkeys(bases):
            stem = "/".join(p for p in (base, rel_mod) if p)
            for cand in ((stem + ".py") if stem else None, "/".join(p for p in (stem, "__init__.py") if p)):
                if cand and cand not in out and self.file(cand) is not None:
                    out.append(cand)
        return out

    def imported(self, from_path: str, level: int, module: str, name: str, depth: int) -> Read:
        """`name` of `module` as `from_path` imports it; every file it can be must agree."""
        where = "." * level + module
        if self.root is None:
            return None, f"`{name}` is imported from {where}, and the guard has no tree to read it in"
        if self._module_files(from_path, level, ".".join(p for p in (module, name) if p)):
            return None, f"`{name}` is a module"
        files = self._module_files(from_path, level, module)
        if not files:
            return None, f"`{name}` is imported from {where}, which is not a file of the tree"
        reads = [self._files[f].scope.name(name, depth) for f in files]
        if len({r[0] for r in reads}) > 1 or reads[0][0] is None:
            bad = next((r for r in reads if r[0] is None), None)
            return bad if bad else (None, f"`{name}` has different values in {', '.join(files)}")
        return reads[0]
