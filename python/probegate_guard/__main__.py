"""probegate's weakened-test guard: `python -m probegate_guard --base B --head H --tests GLOB…`.

Prints one JSON document: the findings (each a test, file, line, kind and message), the findings
the task allows (reported, never dropped), and how many test files each side had. It only parses
files; nothing of either tree is imported or run. Exit 0 whether or not it found anything; 2 on
bad arguments.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys

from .compare import Finding, compare_files
from .config import CONFIG_FILES, compare_config, compare_conftest
from .tests_model import parse_tests
from .tree_files import Tree

MAX_FILE_BYTES = 4 * 1024 * 1024


def _matches(rel: str, globs: list[str]) -> bool:
    for g in globs:
        if fnmatch.fnmatchcase(rel, g) or (g.endswith("/**") and rel.startswith(g[:-3] + "/")):
            return True
        if "**/" in g and fnmatch.fnmatchcase(rel, g.replace("**/", "")):
            return True
    return False


def _walk(root: str) -> list[str]:
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in (".git", "__pycache__", "node_modules", ".tox", ".venv")]
        out.extend(os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/") for f in files)
    return sorted(out)


def _read(root: str, rel: str) -> str | None:
    p = os.path.join(root, rel)
    if os.path.islink(p) or not os.path.isfile(p) or os.path.getsize(p) > MAX_FILE_BYTES:
        return None
    with open(p, encoding="utf-8", errors="replace") as f:
        return f.read()


def _tests_of(root: str, files: list[str], unparsable: list[Finding], side: str) -> dict:
    out = {}
    tree = Tree(root)  # each side's constants are read in its own files
    for rel in files:
        src = _read(root, rel)
        if src is None:
            continue
        try:
            out[rel] = parse_tests(rel, src, tree)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            out[rel] = {}
            if side == "head":
                line = getattr(e, "lineno", None) or 1
                unparsable.append(Finding("unparsable", rel, rel, line, f"{rel} does not parse in the head ({type(e).__name__}: {e}); its tests cannot run"))
    return out


def _applies_to(conftest: str, tests: list[str]) -> bool:
    """Whether pytest would load this conftest.py for one of the watched test files: it applies to the
    tests in its own folder and below (the root's to every test). One in a sibling folder (vLLM's
    tests/evals/mrcr/conftest.py beside tests/v1/core/) is never loaded for them, so it is no finding."""
    folder = conftest.rsplit("/", 1)[0] + "/" if "/" in conftest else ""
    return any(t.startswith(folder) for t in tests)


def _allowed(f: Finding, allow: list[str]) -> bool:
    return any(f.test == a or fnmatch.fnmatchcase(f.file, a) or fnmatch.fnmatchcase(f.test, a) or a == f"{f.kind}:{f.test}" for a in allow)


def run(base: str, head: str, globs: list[str], allow: list[str]) -> dict:
    base_files, head_files = _walk(base), _walk(head)
    sel_base = [f for f in base_files if _matches(f, globs) and f.endswith(".py") and not f.endswith("conftest.py")]
    sel_head = [f for f in head_files if _matches(f, globs) and f.endswith(".py") and not f.endswith("conftest.py")]
    findings: list[Finding] = []
    base_tests = _tests_of(base, sel_base, findings, "base")
    head_tests = _tests_of(head, sel_head, findings, "head")
    findings.extend(compare_files(base_tests, head_tests))
    for rel in head_files:
        name = rel.rsplit("/", 1)[-1]
        if name in CONFIG_FILES and "/" not in rel:
            head_src = _read(head, rel)
            if head_src is not None:
                findings.extend(compare_config(rel, _read(base, rel), head_src))
        elif name == "conftest.py" and _applies_to(rel, sel_base + sel_head):
            head_src = _read(head, rel)
            if head_src is not None:
                findings.extend(compare_conftest(rel, _read(base, rel), head_src))
    kept = [f for f in findings if not _allowed(f, allow)]
    allowed = [f for f in findings if _allowed(f, allow)]
    return {
        "findings": [f.to_json() for f in kept],
        "allowed": [f.to_json() for f in allowed],
        "files": {"base": len(sel_base), "head": len(sel_head)},
        "tests": {"base": sum(len(t) for t in base_tests.values()), "head": sum(len(t) for t in head_tests.values())},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="probegate_guard", description=__doc__)
    ap.add_argument("--base", required=True, help="the PR's base tree")
    ap.add_argument("--head", required=True, help="the PR's head tree")
    ap.add_argument("--tests", nargs="+", required=True, help="globs of the selected test files, relative to the trees")
    ap.add_argument("--allow", nargs="*", default=[], help="test ids, file globs or kind:test-id the task allows to change")
    args = ap.parse_args(argv)
    for side in (args.base, args.head):
        if not os.path.isdir(side):
            print(f"probegate_guard: {side} is not a folder", file=sys.stderr)
            return 2
    sys.setrecursionlimit(10_000)
    json.dump(run(args.base, args.head, args.tests, args.allow), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
