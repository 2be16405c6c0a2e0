"""How a rank's failure travels to the parent and is reported there: the error a rank sends (its
summary, frames and a ProbeFailure's location), a timed-out rank's stack from its faulthandler dump, the
rank whose failure is the root cause, and RankError, which run_ranks raises."""
from __future__ import annotations

import io
import pickle
import re
import traceback


class RankError(RuntimeError):
    """A rank failed (or all were killed on timeout).

    rank, summary ("Type: message"), traceback (formatted, for stderr only), frames
    ([(filename, lineno, ...)] outermost first; on timeout, where the rank was waiting),
    timed_out, assertion (the rank raised an AssertionError), failure (a ProbeFailure's
    message/location/measured when the probe's own check failed inside the rank).
    """

    def __init__(self, message, rank=-1, summary="", tb="", frames=(), timed_out=False,
                 assertion=False, failure=None):
        super().__init__(message)
        self.rank = rank
        self.summary = summary or message
        self.traceback = tb
        self.frames = list(frames)
        self.timed_out = timed_out
        self.assertion = assertion
        self.failure = failure


def _error_info(exc) -> dict:
    from .emit import ProbeFailure
    from .location import normalize_location

    from .emit import exception_frames

    frames = exception_frames(exc)
    text = str(exc).strip()
    summary = type(exc).__name__ + (": " + text.splitlines()[0] if text else "")
    info = {"summary": summary[:1000], "frames": frames, "assertion": isinstance(exc, AssertionError),
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
            "failure": None}
    if isinstance(exc, ProbeFailure):
        try:
            loc = normalize_location(exc.location)
        except ValueError:
            loc = None
        info["failure"] = {"message": exc.message, "location": loc, "measured": exc.measured}
    return info


class _Unpickler(pickle.Unpickler):
    # Classes the probe file defines live in `__mp_main__` inside a rank, `__main__` here.
    def find_class(self, module, name):
        return super().find_class("__main__" if module == "__mp_main__" else module, name)


def _loads(payload: bytes):
    return _Unpickler(io.BytesIO(payload)).load()


_FRAME_RE = re.compile(r'^\s+File "(.+)", line (\d+) in (\S+)')


def _main_thread_frames(stack_file) -> list:
    """Frames (outermost first) of the thread that ran fn, from a faulthandler dump."""
    try:
        text = open(stack_file).read()
    except OSError:
        return []
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", text)
    best = []
    for block in blocks:
        frames = [(m.group(1), int(m.group(2)), m.group(3))
                  for m in map(_FRAME_RE.match, block.splitlines()) if m]
        frames.reverse()  # faulthandler prints the innermost frame first
        if any(name == "_child" for _, _, name in frames):
            return frames
        best = best or frames
    return best


def _pick_error(errors: dict):
    from .location import frames_in_workspace

    # Secondary failures (peers losing their connection) follow the root cause: prefer a rank
    # whose own check failed, then one that raised inside the submission.
    for rank, info in errors.items():
        if info["failure"]:
            return rank, info
    for rank, info in errors.items():
        if frames_in_workspace(info["frames"]):
            return rank, info
    return next(iter(errors.items()))


def _raise(rank, info, tail=""):
    raise RankError(f"rank {rank} failed: {info['summary']}{tail}\n{info['traceback']}", rank=rank,
                    summary=info["summary"], tb=info["traceback"], frames=info["frames"],
                    assertion=info["assertion"], failure=info["failure"])
