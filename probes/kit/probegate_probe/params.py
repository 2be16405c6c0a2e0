"""Probe parameters drawn fresh per evaluation (task.yml `params:`; docs/task-format.md).

The engine draws every declared parameter from a seed it records in the result and hands the
values to each probe process as `$PROBEGATE_PARAMS` (a JSON object) and the seed as
`$PROBEGATE_SEED`. `probegate eval --seed S` reproduces them. Run by hand (no engine), a probe
gets the defaults it passes to `param()`, so it still runs.
"""
from __future__ import annotations

import json
import os
import random

from . import _conf

_MISSING = object()


def params() -> dict:
    """Every drawn value (an empty dict when the engine drew none, e.g. a probe run by hand)."""
    raw = _conf.get("PROBEGATE_PARAMS")
    if not raw:
        return {}
    values = json.loads(raw)
    if not isinstance(values, dict):
        raise ValueError(f"$PROBEGATE_PARAMS must be a JSON object, got {type(values).__name__}")
    return values


def param(name: str, default=_MISSING):
    """The drawn value of `name`; `default` when the engine drew none (a probe run by hand).

    A name the task does not declare, with no default, raises KeyError naming task.yml, so a
    typo cannot silently fall back to one fixed size.
    """
    values = params()
    if name in values:
        return values[name]
    if default is _MISSING:
        declared = ", ".join(sorted(values)) or "none"
        raise KeyError(f"probe parameter {name!r} is not declared in task.yml `params:` (declared: {declared})")
    return default


def seed(default: int = 0) -> int:
    """The evaluation's seed: use it (or `rng()`) for any further random choice a probe makes."""
    raw = _conf.get("PROBEGATE_SEED")
    return int(raw) if raw else default


def rng(salt: str = "") -> random.Random:
    """A `random.Random` seeded by the evaluation's seed (and `salt`, so two uses differ)."""
    return random.Random(f"{seed()}:{salt}")
