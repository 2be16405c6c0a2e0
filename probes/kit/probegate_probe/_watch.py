"""The guard's audit hook: who in the probe process looked for the probe (issue 29; docs/sandbox.md,
"Gaming defences").

An audit hook (`sys.addaudithook`, which cannot be removed) sees frame and heap introspection,
tracers, opening `/proc/<pid>/…` and the probe's, kit's or results' files, listing the folders around
the workspace, importing the kit and swapping a function's code. Only acts of submission code count:
the acting frame is in the workspace, or the standard library acts for a workspace frame (`inspect`,
`os.walk`); the import system and third-party libraries do not (`import numpy` scanning `sys.path`
is no finding). Standard library only: the launcher loads the guard before anything else.
"""
from __future__ import annotations

import os
import re
import sys

_PROC = re.compile(r"^/proc/(self|thread-self|\d+)(/task/\d+)?/(cmdline|environ|exe|cwd|root|fd|fdinfo|mem|maps|smaps|smaps_rollup|"
                   r"mountinfo|mounts|stack|syscall|wchan|map_files)(/|$)")
_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back", "f_globals", "f_locals", "__globals__"})
_CODE_ATTRS = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
_EVENTS = frozenset({"sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile", "gc.get_objects",
                     "gc.get_referrers", "gc.get_referents", "object.__getattr__", "object.__setattr__", "open",
                     "os.listdir", "os.scandir", "import"})
_STACK_READERS = ("/inspect.py", "/traceback.py")
PUBLIC_NAME = "probegate_probe"


def _real(path) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return str(path)


class AuditWatch:
    """The audit-hook half of the guard (mixed into `_guard.Guard`): attributes each audited act to
    submission code or not, and hands what it finds to `self.report`. Uses the guard's `workspace`,
    `watched`, `stdlib`, `alias`, `hidden` and `tls`."""

    # ---- attribution ----------------------------------------------------------------------------
    def _is_submission(self, filename: str) -> bool:
        return filename.startswith(self.workspace + "/") and not filename.startswith(self.watched)

    def _nearest(self, frame, through_import: bool = False):
        """The submission frame on whose behalf `frame` runs: itself, or the first frame past the
        standard library; None when a third-party library, the kit, the probe or the import system
        (finding modules on sys.path) is in between."""
        f = frame
        while f is not None:
            name = f.f_code.co_filename
            if self._is_submission(name):
                return f
            if name.startswith("<frozen importlib") or "/importlib/" in name:
                if not through_import:
                    return None
            elif not (name.startswith(self.stdlib) or name.startswith("<frozen")):
                return None
            f = f.f_back
        return None

    def _stack_reader(self, caller):
        """A submission frame that asked for frames: directly, or through inspect / traceback."""
        if caller is None:
            return None
        if self._is_submission(caller.f_code.co_filename):
            return caller
        if caller.f_code.co_filename.endswith(_STACK_READERS):
            return self._nearest(caller)
        return None

    def _watched_path(self, path: str) -> bool:
        return bool(_PROC.match(path)) or (self.watched and path.startswith(self.watched)) or path in self.watched

    # ---- the audit hook ---------------------------------------------------------------------------
    def hook(self, event, args):
        if event not in _EVENTS or self.hidden is False:
            return
        tls = self.tls
        if getattr(tls, "busy", False):
            return
        tls.busy = True
        try:
            self._audit(event, args)
        except Exception:  # the guard must never break the probe
            pass
        finally:
            tls.busy = False

    def _audit(self, event, args):
        if event == "open":
            path = args[0]
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if not isinstance(path, str):
                return
            full = os.path.abspath(path)
            if not self._watched_path(full) and not self._watched_path(_real(full)):
                return
            who = self._nearest(sys._getframe(2))
            if who is not None:
                mode = args[1] if len(args) > 1 and isinstance(args[1], str) else "r"
                self.report(f"{'wrote' if any(c in mode for c in 'wax+') else 'read'} {full}", who)
            return
        if event in ("os.listdir", "os.scandir"):
            path = args[0] if args else "."
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if not isinstance(path, str):
                return
            full = _real(path or ".")
            around = self.workspace.startswith(full.rstrip("/") + "/") or full == "/proc" or self._watched_path(full + "/")
            if around and (who := self._nearest(sys._getframe(2))) is not None:
                self.report(f"listed {full}", who)
            return
        if event == "import":
            name = str(args[0])
            if name == PUBLIC_NAME or name.startswith(PUBLIC_NAME + ".") or name == self.alias or name.startswith(self.alias + "."):
                who = self._nearest(sys._getframe(2), through_import=True)
                if who is not None:
                    self.report(f"imported the probe kit ({name})", who)
            return
        if event == "object.__getattr__":
            if len(args) > 1 and args[1] in _FRAME_ATTRS:
                caller = sys._getframe(2)
                who = caller if self._is_submission(caller.f_code.co_filename) else None
                if who is not None:
                    self.report(f"inspected the call stack ({type(args[0]).__name__}.{args[1]})", who)
            return
        if event == "object.__setattr__":
            if len(args) > 1 and args[1] in _CODE_ATTRS:
                # A submission may set its own functions' defaults or code, and the standard library
                # does so for it (a NamedTuple with defaults): only a swap that submission code makes
                # itself, of a function defined outside the workspace (the kit, the probe, a library),
                # is the patching this watches for.
                frame = sys._getframe(2)
                code = getattr(args[0], "__code__", None)
                own = code is not None and self._is_submission(code.co_filename)
                who = frame if self._is_submission(frame.f_code.co_filename) and not own else None
                if who is not None:
                    target = getattr(args[0], "__qualname__", type(args[0]).__name__)
                    owner = getattr(args[0], "__module__", "") or ""
                    kit = owner == self.alias or owner.startswith(self.alias + ".") or owner.startswith(PUBLIC_NAME)
                    self.report(f"replaced {args[1]} of {'the probe kit' + chr(39) + 's ' if kit else ''}{target}", who)
            return
        if event in ("sys._getframe", "sys._current_frames"):
            who = self._stack_reader(sys._getframe(2))
            if who is not None:
                self.report(f"inspected the call stack ({event})", who)
            return
        # tracers and heap walks see every frame and object of the probe
        who = self._nearest(sys._getframe(2))
        if who is not None:
            self.report(f"{'installed a tracer' if event.startswith('sys.') else 'searched the heap'} ({event})", who)
