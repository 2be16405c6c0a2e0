"""Deselection through configuration: pytest options and conftest hooks a change adds.

A PR can leave every test file alone and still stop tests from running: `addopts = --deselect …`,
`-k 'not slow'`, `--ignore=tests/x`, a narrower `testpaths`, or a conftest.py hook that drops items
or rewrites their outcomes. Each is compared between base and head.
"""
from __future__ import annotations

import ast
import configparser
import shlex

from .compare import Finding

try:  # Python 3.11+
    import tomllib
except ImportError:  # pragma: no cover - older interpreters read no pyproject.toml options
    tomllib = None

CONFIG_FILES = ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini")
# addopts flags that remove tests from a run or change what counts as passing.
NARROWING_FLAGS = ("--deselect", "--ignore", "--ignore-glob", "-k", "-m", "-p", "--last-failed", "--lf", "-x", "--exitfirst", "--maxfail", "--runxfail", "--continue-on-collection-errors")
COLLECTION_KEYS = ("testpaths", "python_files", "python_classes", "python_functions", "norecursedirs", "xfail_strict", "filterwarnings")
# conftest.py names that change which tests run or what their outcome is.
HOOKS = ("collect_ignore", "collect_ignore_glob", "pytest_collection_modifyitems", "pytest_ignore_collect", "pytest_deselected",
         "pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_makereport", "pytest_runtest_protocol", "pytest_report_teststatus",
         "pytest_collect_file", "pytest_pycollect_makeitem", "pytest_generate_tests", "pytest_configure", "pytest_sessionfinish")


def pytest_options(name: str, source: str) -> dict[str, str]:
    """The [pytest] options of one config file (empty when it has none or cannot be read)."""
    if name == "pyproject.toml":
        if tomllib is None:
            return {}
        try:
            opts = tomllib.loads(source).get("tool", {}).get("pytest", {}).get("ini_options", {})
        except (tomllib.TOMLDecodeError, AttributeError):
            return {}
        return {k: " ".join(map(str, v)) if isinstance(v, list) else str(v) for k, v in opts.items()}
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(source)
    except configparser.Error:
        return {}
    section = "tool:pytest" if name == "setup.cfg" else "pytest"
    return dict(parser[section]) if parser.has_section(section) else {}


def _line_of(source: str, needle: str) -> int:
    for i, line in enumerate(source.splitlines(), 1):
        if needle in line:
            return i
    return 1


def _flags(addopts: str) -> list[str]:
    try:
        words = shlex.split(addopts)
    except ValueError:
        words = addopts.split()
    out, i = [], 0
    while i < len(words):
        w = words[i]
        flag = w.split("=", 1)[0]
        if flag in NARROWING_FLAGS:
            if "=" in w or flag in ("--lf", "--last-failed", "-x", "--exitfirst", "--runxfail", "--continue-on-collection-errors"):
                out.append(w)
            else:
                out.append(f"{w} {words[i + 1]}" if i + 1 < len(words) else w)
                i += 1
        i += 1
    return out


def compare_config(path: str, base_source: str | None, head_source: str) -> list[Finding]:
    """Options the head's config file adds that run fewer tests, or change collection."""
    name = path.rsplit("/", 1)[-1]
    before = pytest_options(name, base_source or "")
    after = pytest_options(name, head_source)
    out: list[Finding] = []
    old_flags = set(_flags(before.get("addopts", "")))
    for flag in _flags(after.get("addopts", "")):
        if flag not in old_flags:
            out.append(Finding("deselected", f"{path} [pytest] addopts", path, _line_of(head_source, flag.split()[-1]), f"addopts gains `{flag}`, which leaves tests out of the run or changes their outcome"))
    for key in COLLECTION_KEYS:
        if key in after and after.get(key) != before.get(key):
            was = before.get(key)
            out.append(Finding("deselected", f"{path} [pytest] {key}", path, _line_of(head_source, key), f"{key} changes from {was!r} to {after[key]!r}" if was is not None else f"{key} is set to {after[key]!r}"))
    return out


def _conftest_names(source: str) -> dict[str, tuple[str, int]]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    names: dict[str, tuple[str, int]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in HOOKS:
            names[node.name] = (ast.dump(node, annotate_fields=False, include_attributes=False), node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id in HOOKS:
                    names[t.id] = (ast.dump(node, annotate_fields=False, include_attributes=False), node.lineno)
    return names


def compare_conftest(path: str, base_source: str | None, head_source: str) -> list[Finding]:
    """Collection and outcome hooks that a conftest.py gains or changes."""
    before = _conftest_names(base_source or "")
    out: list[Finding] = []
    for name, (dump, line) in _conftest_names(head_source).items():
        if name not in before:
            out.append(Finding("deselected", f"{path}::{name}", path, line, f"{path} adds {name}, which can drop tests or rewrite their outcomes"))
        elif before[name][0] != dump:
            out.append(Finding("deselected", f"{path}::{name}", path, line, f"{path} changes {name}, which can drop tests or rewrite their outcomes"))
    return out
