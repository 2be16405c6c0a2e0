"""The probe protocol: one JSON line per check appended to $PROBEGATE_RESULTS (docs/task-format.md)."""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import traceback
from typing import Optional

from . import _conf
from .location import frames_in_workspace, normalize_location

ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
CATEGORIES = ("structure", "state", "functional", "memory", "time", "traffic")
STATUSES = ("passed", "failed", "error", "skipped")
MAX_MESSAGE = 2000
MAX_ID = 128
MAX_KEY = 128
MAX_STR = 256


class ProbeFailure(AssertionError):
    """The submission is wrong: becomes a `failed` check with this message and location."""

    def __init__(self, message, location=None, measured=None):
        super().__init__(message)
        self.message = str(message)
        self.location = location
        self.measured = dict(measured) if measured else None

    def __str__(self):
        return self.message


class ProbeSkipped(Exception):
    """The check cannot apply here (e.g. no GPU): becomes a `skipped` check."""


class RunnerBusy(Exception):
    """The runner could not give the measurement what it needs (its CPUs were oversubscribed while a
    time check ran): an `error` check, never the submission's fault; the engine runs it again."""

    def __init__(self, message, measured=None):
        super().__init__(message)
        self.message = str(message)
        self.measured = dict(measured) if measured else None

    def __str__(self):
        return self.message


def slug_id(prefix: str, text: str, key: Optional[str] = None, always: bool = False) -> str:
    """`<prefix>.<text>` within the check id pattern: lower case, other characters as '-'. Where that changed
    `text` (or `always`), 8 hex of a hash of `key` (else `text`) follow, so two names never share an id."""
    slug = re.sub(r"[^a-z0-9._]+", "-", text.lower()).strip("-._") or "check"
    if slug == text and not always:
        return f"{prefix}.{slug}"[:MAX_ID]
    digest = hashlib.sha1((key if key is not None else text).encode()).hexdigest()[:8]
    return f"{prefix}.{slug[:96].rstrip('-._')}-{digest}"


def _validate_id(id) -> None:
    if not isinstance(id, str) or len(id) > MAX_ID or not ID_RE.match(id):
        raise ValueError(f"check id must match [a-z0-9][a-z0-9._-]* (≤{MAX_ID} chars), got {id!r}")


def _validate_category(category) -> None:
    if category not in CATEGORIES:
        raise ValueError(f"category must be one of {', '.join(CATEGORIES)}, got {category!r}")


def _measured_value(key, value):
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 0) == 0:
        value = value.item()  # 0-d tensors and numpy scalars
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        # JSON has no NaN/Infinity; the engine's parser would reject the whole line.
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return value[:MAX_STR]
    raise ValueError(f"measured[{key!r}] must be a number, bool or short string, got {type(value).__name__}")


def _normalize_measured(measured) -> Optional[dict]:
    if measured is None:
        return None
    if not isinstance(measured, dict):
        raise ValueError(f"measured must be a dict, got {type(measured).__name__}")
    out = {}
    for key, value in measured.items():
        if not isinstance(key, str) or not key or len(key) > MAX_KEY:
            raise ValueError(f"measured keys must be non-empty strings ≤{MAX_KEY} chars, got {key!r}")
        out[key] = _measured_value(key, value)
    return out or None


def _cap(message: str) -> str:
    message = str(message)
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"


def _normalize_requirements(requirements) -> Optional[list]:
    if requirements is None:
        return None
    if isinstance(requirements, str):
        requirements = [requirements]
    out = []
    for r in requirements:
        if not isinstance(r, str) or len(r) > MAX_ID or not ID_RE.match(r):
            raise ValueError(f"requirement ids must match [a-z0-9][a-z0-9._-]* (≤{MAX_ID} chars), got {r!r}")
        if r not in out:
            out.append(r)
    if len(out) > 64:
        raise ValueError(f"a check names at most 64 requirements, got {len(out)}")
    return out or None


def emit(id, category, status, message="", location=None, measured=None, requirements=None) -> dict:
    """Append one check to $PROBEGATE_RESULTS (stdout when unset); returns the record written.

    `requirements`: ids from the task's `requirements:` (task.yml) that this check covers.
    """
    from . import ranks  # late: ranks imports torch

    if ranks.importing_in_child():
        return {}  # a spawned rank re-imports the probe file: its top-level checks belong to the parent
    _validate_id(id)
    _validate_category(category)
    if status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
    record = {"id": id, "category": category, "status": status, "message": _cap(message or "")}
    loc = normalize_location(location)
    if loc is not None:
        record["location"] = loc
    meas = _normalize_measured(measured)
    if meas is not None:
        record["measured"] = meas
    reqs = _normalize_requirements(requirements)
    if reqs is not None:
        record["requirements"] = reqs
    line = sealed_line(record)
    target = _conf.get("PROBEGATE_RESULTS")
    if target:
        # One write() on an O_APPEND descriptor: lines from several processes never interleave,
        # and each line is on disk before the probe can crash.
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    else:
        sys.stdout.write(line)
        sys.stdout.flush()
    return record


def sealed_line(record: dict) -> str:
    """One JSON line; sealed (a trailing `"seal"` HMAC the engine checks) when the engine asked for it,
    so a line something else in the probe process wrote is told apart from the kit's."""
    body = json.dumps(record, ensure_ascii=False, allow_nan=False)
    seal = _conf.seal(body.encode("utf-8"))
    if seal is not None:
        body = body[:-1] + ', "seal": "' + seal + '"}'
    return body + "\n"


def exception_frames(exc) -> list:
    """(filename, lineno) frames, outermost first, of exc and of what it was raised `from`.

    A SyntaxError adds the offending line, which is in no frame. A RankError carries its rank's
    frames.
    """
    frames, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        carried = getattr(exc, "frames", None)
        own = [tuple(f[:2]) for f in carried] if carried else \
            [(f.filename, f.lineno) for f in traceback.extract_tb(exc.__traceback__)]
        if isinstance(exc, SyntaxError) and exc.filename:
            own.append((exc.filename, exc.lineno or 1))
        frames = own + frames  # the cause happened deeper than what wraps it
        exc = exc.__cause__
    return frames


def _one_line(exc) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _assert_message(exc) -> str:
    # Assertion rewriting (pytest) appends the asserted source ("assert x == y"): drop it.
    kept = []
    for line in str(exc).splitlines():
        if line.lstrip().startswith("assert "):
            break
        kept.append(line)
    return "\n".join(kept).strip() or "assertion failed"


class check:
    """`with check(id, category) as c:` emits exactly one line when the block exits.

    passed: no exception. failed: ProbeFailure/AssertionError, or any exception raised inside
    the submission (a traceback frame in the workspace). error: anything else (a probe or harness
    bug). The exception is swallowed so later checks still run; tracebacks go to stderr only.
    """

    def __init__(self, id, category, location=None, requirements=None):
        _validate_id(id)
        _validate_category(category)
        self.requirements = _normalize_requirements(requirements)
        self.id = id
        self.category = category
        self.location = location
        self.measured: dict = {}
        self.message = ""
        self.record: Optional[dict] = None

    def fail(self, message, location=None, measured=None):
        raise ProbeFailure(message, location=location, measured=measured)

    def skip(self, reason):
        raise ProbeSkipped(reason)

    def __enter__(self):
        return self

    def _classify(self, exc):
        from .ranks import RankError

        if isinstance(exc, ProbeSkipped):
            return "skipped", str(exc), None, None
        if isinstance(exc, ProbeFailure):
            return "failed", exc.message, exc.location, exc.measured
        if isinstance(exc, RunnerBusy):
            return "error", f"runner busy: {exc.message}", None, exc.measured
        if isinstance(exc, RankError) and exc.failure is not None:
            f = exc.failure
            return "failed", f"rank {exc.rank}: {f['message']}", f.get("location"), f.get("measured")
        in_ws = frames_in_workspace(exception_frames(exc))
        if isinstance(exc, RankError):
            if in_ws:
                where = in_ws[-1]
                what = "hung" if exc.timed_out else "raised"
                detail = exc.summary
                return "failed", f"rank {exc.rank}: {detail} ({what} in {where['path']}:{where['line']})", where, None
            return ("error" if not exc.assertion else "failed"), f"rank {exc.rank}: {exc.summary}", None, None
        if in_ws:
            where = in_ws[-1]
            return "failed", f"{_one_line(exc)} (raised in {where['path']}:{where['line']})", where, None
        if isinstance(exc, AssertionError):
            return "failed", _assert_message(exc), None, None
        return "error", f"probe error: {_one_line(exc)}", None, None

    def __exit__(self, exc_type, exc, tb):
        if exc is not None and not isinstance(exc, Exception):
            return False  # KeyboardInterrupt / SystemExit keep propagating
        measured = dict(self.measured)
        location = self.location
        if exc is None:
            status, message = "passed", self.message
        else:
            status, message, exc_loc, exc_meas = self._classify(exc)
            if exc_loc is not None:
                location = exc_loc
            if exc_meas:
                measured.update(exc_meas)
            if (status == "error" and not isinstance(exc, RunnerBusy)) or not isinstance(exc, (ProbeFailure, ProbeSkipped, RunnerBusy)):
                sys.stderr.write(f"[probegate] check {self.id}: {status}\n")
                traceback.print_exception(exc_type, exc, tb, file=sys.stderr)
        try:
            loc = normalize_location(location)
        except ValueError:
            loc = None
        try:
            self.record = emit(self.id, self.category, status, message, loc, measured or None, self.requirements)
        except ValueError as bad:  # an unusable measured value must not lose the verdict
            self.record = emit(self.id, self.category, status, f"{message} [measured dropped: {bad}]", loc, None, self.requirements)
        return True
