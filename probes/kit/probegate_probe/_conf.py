"""What the engine hands the kit, kept where submission code does not look (issue 29).

Run by hand (no launcher), the kit reads its `PROBEGATE_*` variables from the environment, as it
always did. Started by the engine's launcher (`probegate_launch.py`), the kit gets them here instead,
together with the key that seals each results line, and the launcher removes the variables from
`os.environ` before the submission is imported: a submission that looks for `PROBEGATE_*` finds
nothing, and one that writes a results line cannot seal it.
"""
from __future__ import annotations

import hashlib
import hmac
import os
from typing import Optional

_values: Optional[dict] = None
_key: Optional[bytes] = None  # seals results lines (in-process code can reach it; the audit hook watches the ways)
_main_file: Optional[str] = None   # the probe script, once the launcher hid it from __main__-readers
_on_install = []     # callbacks run when the launcher installs the configuration (rank children)


def install(values: dict, key: Optional[bytes] = None, main_file: Optional[str] = None) -> None:
    """Called by the launcher (and in each rank by run_ranks) before the submission is imported."""
    global _values, _key, _main_file
    _values = {k: str(v) for k, v in values.items()}
    if key is not None:
        _key = bytes(key)
    if main_file:
        _main_file = main_file


def installed() -> bool:
    """Whether the engine's launcher configured this process (then the environment is not read)."""
    return _values is not None


def get(name: str, default: Optional[str] = None) -> Optional[str]:
    """A `PROBEGATE_*` value: the launcher's copy where there is one, else the environment's."""
    if _values is not None and name in _values:
        return _values[name]
    return os.environ.get(name, default)


def values() -> dict:
    """Every value the kit was handed (what a rank process needs to be configured the same)."""
    if _values is not None:
        return dict(_values)
    return {k: v for k, v in os.environ.items() if k.startswith("PROBEGATE_")}


def seal(body: bytes) -> Optional[str]:
    """The seal of one results line (None when the engine asked for none: the kit run by hand)."""
    return hmac.new(_key, body, hashlib.sha256).hexdigest() if _key is not None else None


def state() -> Optional[tuple]:
    """(values, key, main file) for a rank process to install; None when the launcher configured nothing."""
    return (dict(_values), _key, _main_file) if _values is not None else None


def main_file() -> Optional[str]:
    """The probe script's path (the launcher keeps it; __main__.__file__ otherwise)."""
    return _main_file
