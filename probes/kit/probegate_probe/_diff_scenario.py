"""What differential() checks of its scenario before any rank starts: each rank imports the scenario by
module and name, so it must be a module-level function that the ranks' import of its module defines (a
probe file's ranks import it as `__mp_main__`, where its `if __name__ == "__main__":` block does not run)."""
from __future__ import annotations

import ast
import functools
import sys


def _source(fn) -> str:
    code = getattr(fn, "__code__", None)
    return f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""


def _under_main_guard(fn) -> bool:
    """True when the probe file defines `fn` only inside a top-level `if` block (its __main__ guard)."""
    code = getattr(fn, "__code__", None)
    try:
        with open(code.co_filename) as fh:
            tree = ast.parse(fh.read())
    except (AttributeError, OSError, SyntaxError, ValueError):
        return False
    name = fn.__name__
    defs = (ast.FunctionDef, ast.AsyncFunctionDef)
    if any(isinstance(n, defs) and n.name == name for n in tree.body):
        return False
    return any(isinstance(n, defs) and n.name == name for top in tree.body if isinstance(top, ast.If) for n in ast.walk(top))


def require_module_level(scenario) -> None:
    """Raises TypeError, naming the scenario, when the ranks could not import it by name."""
    if isinstance(scenario, functools.partial):
        return require_module_level(scenario.func)
    if not callable(scenario):
        raise TypeError(f"differential(): the scenario must be a module-level function, got {type(scenario).__name__} {scenario!r}")
    qual = getattr(scenario, "__qualname__", None)
    module = getattr(scenario, "__module__", None)
    if not qual or not module:
        return  # a callable object: pickled by value, the ranks' own business
    problem = None
    if "<lambda>" in qual:
        problem = "a lambda has no name the ranks can import"
    elif "<locals>" in qual:
        problem = f"it is defined inside {qual.split('.<locals>')[0]}(), where the ranks cannot import it"
    else:
        obj = sys.modules.get(module)
        for part in qual.split("."):
            obj = getattr(obj, part, None)
        if obj is not scenario and getattr(obj, "__wrapped__", None) is not scenario:
            problem = f"module {module} has no top-level `{qual}` that is this function"
        elif module == "__main__" and _under_main_guard(scenario):
            problem = ('it is defined under `if __name__ == "__main__":`, which the ranks\' import of the probe file (as '
                       "__mp_main__) does not run")
    if problem:
        raise TypeError(f"differential(): the scenario must be a module-level function of the probe file (each rank imports it "
                        f"by name): `{qual}` of {module}{_source(scenario)} is not: {problem}; define it at the top level of the file")
