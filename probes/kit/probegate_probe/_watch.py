"""The guard's audit hook: who in the probe process looked for the probe (issue 29; docs/sandbox.md,
"Gaming defences").

An audit hook (`sys.addaudithook`, which cannot be removed) sees frame and heap introspection,
tracers, opening `/proc/<pid>/…` and the probe's, kit's or results' files, listing the folders around
the workspace, importing the kit and swapping a function's code. Only acts of submission code count
(issue 38): walking out from the acting frame, the standard library (`inspect`, `os.walk`) and code
made at run time are passed through, so they act for the submission frame beyond them; a third-party
frame (anything in a `site-packages` / `dist-packages` folder) ends the walk, unless the act came
through a callable handed to it. Standard library only: the launcher loads the guard before anything.

Why "handed": torch's FakeTensorMode calls `traceback.extract_stack()` while the submission's
`clip_grad_norm_` is further out; that read is torch's, not the PR's. But a submission could call
`torch.utils._pytree.tree_map(sys._getframe, 0)` to get a frame "read by torch". A library frame
counts as the actor only when its own code names what it called (`extract_stack` in its `co_names`,
or a global of its module bound to that function); otherwise the walk goes on through it to the
submission frame. The trade-off, plainly: a library function that itself reads the stack by name and
returns what it read (or reads it in C: torch's CapturedTraceback) still launders a read; a library
that calls a stack reader it was given through its own attribute (`self._capture()`) is blamed on
the submission beyond it. Naming is checked only where a library frame meets the act, so the cost
is paid on audited acts alone.
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
_SITE_SEGMENTS = ("/site-packages/", "/dist-packages/")
PUBLIC_NAME = "probegate_probe"


def _real(path) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return str(path)


def _folders(paths) -> tuple:
    return tuple(sorted({d.rstrip("/") + "/" for p in paths if p for d in (str(p), _real(p))}))


def stdlib_folders() -> tuple:
    """The standard library's folders (sysconfig's stdlib and platstdlib, as given and resolved)."""
    import sysconfig

    paths = sysconfig.get_paths()
    return _folders(paths.get(k) for k in ("stdlib", "platstdlib"))


def library_folders(stdlib=(), ours=()) -> tuple:
    """Where site and sysconfig put this environment's packages, and the other folders on sys.path
    when the guard starts (editable installs, .pth files). In a venv (uv's task environments)
    platstdlib is the venv's lib/python3.X, which holds site-packages: taken alone as the standard
    library, it made every package of the environment act for the submission (issue 38). Left out:
    folders that hold the standard library or lie in it (lib-dynload), and those that hold `ours`
    (the workspace, the kit, the probes). A folder the submission adds to sys.path later is none of
    these: its code acts for whoever calls it."""
    import site
    import sysconfig

    found = []
    for get in (lambda: site.getsitepackages(), lambda: [site.getusersitepackages()],
                lambda: [sysconfig.get_paths().get(k) for k in ("purelib", "platlib")]):
        try:
            found.extend(get())
        except Exception:  # a site module without these (an old virtualenv's)
            pass
    on_path = [p for p in _folders(p for p in sys.path if p and os.path.isabs(p) and os.path.isdir(p))
               if not any(s.startswith(p) or p.startswith(s) for s in stdlib) and not any((o + "/").startswith(p) or p.startswith(o + "/") for o in ours)]
    return tuple(sorted({d for d in _folders(found) if not any(s.startswith(d) for s in stdlib)} | set(on_path)))


def _names(frame, inner, builtin: str) -> bool:
    """Whether `frame`'s own code names what it called: `inner`'s function (by name, or through a
    global of its module bound to it: `from traceback import extract_stack as _es`), else the
    builtin act itself. Dunder and `<…>` callees (constructors, context managers, comprehensions)
    pass: Python calls them for code that names something else."""
    code = frame.f_code
    target = inner.f_code if inner is not None else None
    name = target.co_name if target is not None else builtin
    if name in code.co_names or name.startswith("<") or (name.startswith("__") and name.endswith("__")):
        return True
    scope = frame.f_globals
    for n in code.co_names:
        obj = scope.get(n)
        if obj is None:
            continue
        if target is not None and getattr(obj, "__code__", None) is target:
            return True
        if target is None and callable(obj) and getattr(obj, "__name__", None) == builtin:
            return True
    return False


def _module(filename: str) -> str:
    if filename.startswith("<frozen "):
        return filename[8:].rstrip(">")
    head, base = os.path.split(filename)
    base = os.path.splitext(base)[0]
    return os.path.basename(head) if base == "__init__" else base


def _short(filename: str) -> str:
    for seg in _SITE_SEGMENTS:
        if seg in filename:
            return filename.rsplit(seg, 1)[1]
    return filename


def _how(via, handed) -> str:
    """How the act reached the submission frame, for the message: the standard-library function it
    called, and the library frame it handed a callable to."""
    parts = []
    if via is not None:  # os.walk runs in os._walk: a private name says less than its module
        name = via.f_code.co_name
        parts.append(f"through {_module(via.f_code.co_filename)}" + ("" if name.startswith("_") else f".{name}"))
    if handed is not None:
        parts.append(f"handed as a callable to {_short(handed.f_code.co_filename)}:{handed.f_lineno} ({handed.f_code.co_name})")
    return ", ".join(parts)


class AuditWatch:
    """The audit-hook half of the guard (mixed into `_guard.Guard`): attributes each audited act to
    submission code or not, and hands what it finds to `self.report`. Uses the guard's `workspace`,
    `watched`, `stdlib`, `libraries`, `alias`, `hidden` and `tls`."""

    # ---- attribution ----------------------------------------------------------------------------
    def _is_submission(self, filename: str) -> bool:
        return filename.startswith(self.workspace + "/") and not filename.startswith(self.watched)

    def _origin(self, filename: str) -> str:
        """Whose code a frame runs: submission (the workspace, even inside a site-packages folder),
        probe (the kit, the probes, the results: watched), import (the import system), stdlib,
        made (code made at run time, `<string>`, or a file outside every known folder: it acts for
        whoever called it), or library (site-packages / dist-packages, wherever they are)."""
        if self._is_submission(filename):
            return "submission"
        if self.watched and filename.startswith(self.watched):
            return "probe"
        if filename.startswith("<"):
            if filename.startswith("<frozen importlib"):
                return "import"
            return "stdlib" if filename.startswith("<frozen") else "made"
        if any(s in filename for s in _SITE_SEGMENTS) or filename.startswith(self.libraries):
            return "library"
        if filename.startswith(self.stdlib):
            return "import" if "/importlib/" in filename else "stdlib"
        return "made"

    def _acting_for(self, frame, builtin: str, through_import: bool = False, stack_read: bool = False):
        """(submission frame, how) on whose behalf `frame` did the act, or None: the act is a
        library's own (a library frame whose code names what it called), the probe's, or the import
        system's (finding modules on sys.path). `builtin`: the act's name (`_getframe`, `open`)."""
        f, inner, via, handed = frame, None, None, None
        while f is not None:
            code = f.f_code
            kind = self._origin(code.co_filename)
            if kind == "submission":
                return f, _how(via, handed)
            if kind == "probe":
                return None
            if handed is None:
                own = kind == "library" or (stack_read and inner is None and kind == "stdlib"
                                            and not code.co_filename.endswith(_STACK_READERS))
                if own:  # a stack read by the rest of the standard library is its own (logging, typing)
                    if _names(f, inner, builtin):
                        return None
                    handed = f
                elif kind == "import" and not through_import:
                    return None
                elif kind in ("stdlib", "import"):
                    via = f
            inner = f
            f = f.f_back
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
            who = self._acting_for(sys._getframe(2), "open")
            if who is not None:
                mode = args[1] if len(args) > 1 and isinstance(args[1], str) else "r"
                self.report(f"{'wrote' if any(c in mode for c in 'wax+') else 'read'} {full}", who[0], who[1])
            return
        if event in ("os.listdir", "os.scandir"):
            path = args[0] if args else "."
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if not isinstance(path, str):
                return
            full = _real(path or ".")
            around = self.workspace.startswith(full.rstrip("/") + "/") or full == "/proc" or self._watched_path(full + "/")
            if around and (who := self._acting_for(sys._getframe(2), event[3:])) is not None:
                self.report(f"listed {full}", who[0], who[1])
            return
        if event == "import":
            name = str(args[0])
            if name == PUBLIC_NAME or name.startswith(PUBLIC_NAME + ".") or name == self.alias or name.startswith(self.alias + "."):
                who = self._acting_for(sys._getframe(2), name, through_import=True)
                if who is not None:
                    self.report(f"imported the probe kit ({name})", who[0], who[1])
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
            who = self._acting_for(sys._getframe(2), event[4:], stack_read=True)
            if who is not None:
                self.report(f"inspected the call stack ({event})", who[0], who[1])
            return
        # tracers and heap walks see every frame and object of the probe
        who = self._acting_for(sys._getframe(2), event.partition(".")[2])
        if who is not None:
            self.report(f"{'installed a tracer' if event.startswith('sys.') else 'searched the heap'} ({event})", who[0], who[1])
