"""The Python 3.12 names Megatron-LM's import closure uses, given to a 3.11 interpreter.

Megatron-LM declares requires-python >= 3.12 since PR #3826 (2026-03-30). The runner's base
interpreter is Debian's 3.11 (the sandbox's user cannot read pyenv's under /root). Of 3.12, the
DDP subsystem's tests and their harness (tests/unit_tests/test_utilities.py -> megatron.training)
need one name: `typing.override` (PEP 698), a decorator that only marks a method; 3.12's sets
`__override__` and returns the function, and so does this one. Nothing is installed on 3.12 or
later, where the real one exists. A tree that needs more of 3.12 (new syntax) fails to import
here, on the base and the head alike, and the evaluation says so.
"""
import sys
import typing


def _override(method):
    """PEP 698's typing.override: marks `method` as overriding and returns it unchanged."""
    try:
        method.__override__ = True
    except (AttributeError, TypeError):
        pass
    return method


def install() -> bool:
    """Adds the missing 3.12 names on an older interpreter; True when it added any."""
    if sys.version_info >= (3, 12) or hasattr(typing, "override"):
        return False
    typing.override = _override
    return True
