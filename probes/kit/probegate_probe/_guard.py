"""The guard of a probe process: makes the probe look like the official run to the submission, and
reports what the submission did to find out otherwise (issue 29; docs/sandbox.md, "Gaming defences").

Standard library only: the launcher (`probegate_launch.py`) loads this file before anything else, so
it runs for probes that never import the kit too. What it does, before the submission is imported
(the first import of a module from the workspace):

* the kit's public name `probegate_probe` leaves `sys.modules` (the kit lives on under the
  per-evaluation name the engine gave its folder), the `PROBEGATE_*` variables leave `os.environ`
  (the kit keeps its copy), `PYTHONPATH` and `sys.argv` become what the official tests had;
* an audit hook (`sys.addaudithook`, which cannot be removed) watches for submission code that
  inspects frames or the heap, reads `/proc/<pid>/cmdline|environ|fd…`, lists the folders around the
  workspace, opens the probe's, kit's or results' files, imports the kit, or swaps a function's
  code. The first such act is written at once, sealed, as a failed check `<probe>.integrity` naming
  what was done and where; later ones go to stderr (the runner log).

Every line the guard writes is sealed with the key the engine handed over on stdin; the engine
drops any line that is not (docs/task-format.md).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import sys
import sysconfig
import threading

_PROC = re.compile(r"^/proc/(self|thread-self|\d+)(/task/\d+)?/(cmdline|environ|exe|cwd|root|fd|fdinfo|mem|maps|smaps|smaps_rollup|"
                   r"mountinfo|mounts|stack|syscall|wchan|map_files)(/|$)")
_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back", "f_globals", "f_locals", "__globals__"})
_CODE_ATTRS = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
_EVENTS = frozenset({"sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile", "gc.get_objects",
                     "gc.get_referrers", "gc.get_referents", "object.__getattr__", "object.__setattr__", "open",
                     "os.listdir", "os.scandir", "import"})
_STACK_READERS = ("/inspect.py", "/traceback.py")
PUBLIC_NAME = "probegate_probe"

_active = None  # the guard of this process, once started


def _real(path) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return str(path)


class Guard:
    """One process's guard: configuration from the engine, the results descriptor, what was seen."""

    def __init__(self, conf: dict, probe: str):
        self.conf = conf
        self.probe = probe
        self.probe_id = re.sub(r"[^a-z0-9.-]+", "-", os.path.splitext(os.path.basename(probe))[0].lower()).strip("-") or "probe"
        self.key = bytes.fromhex(conf["key"]) if conf.get("key") else None
        self.workspace = _real(conf.get("workspace") or os.getcwd())
        self.watched = tuple(_real(p) for p in conf.get("watched", []) if p)
        self.alias = conf.get("kit") or PUBLIC_NAME
        self.stdlib = tuple(sorted({_real(sysconfig.get_paths()[k]) + "/" for k in ("stdlib", "platstdlib")}))
        self.env = {k: v for k, v in os.environ.items() if k.startswith("PROBEGATE_")}
        self.fd = None
        self.tls = threading.local()
        self.reported = False
        self.count = 0
        self.hidden = False
        self.kit = None
        self.kit_code: dict = {}
        self.main_hidden = None  # the __main__ module whose __file__ was changed at hide()

    # ---- writing --------------------------------------------------------------------------------
    def _open_results(self) -> None:
        path = self.env.get("PROBEGATE_RESULTS")
        if path and self.fd is None:
            try:
                self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError:
                self.fd = None

    def write(self, record: dict) -> None:
        """One sealed line on the results descriptor (a single write: never interleaved)."""
        body = json.dumps(record, ensure_ascii=False)
        if self.key is not None:
            body = body[:-1] + ', "seal": "' + hmac.new(self.key, body.encode("utf-8"), hashlib.sha256).hexdigest() + '"}'
        if self.fd is not None:
            try:
                os.write(self.fd, (body + "\n").encode("utf-8"))
            except OSError:
                pass

    def report(self, what: str, frame) -> None:
        """The submission did something that looks for the probe: the first becomes a failed check."""
        path, line = self._where(frame)
        text = f"submission code {what} ({path}:{line}) while it was being probed"
        self.count += 1
        if self.count <= 20:  # the runner log; a walk of the filesystem must not fill the output limit
            try:
                os.write(2, f"[probegate] {text}\n".encode("utf-8", "replace"))
            except OSError:
                pass
        if self.reported:
            return
        self.reported = True
        self.write({"id": f"{self.probe_id}.integrity", "category": "functional", "status": "failed",
                    "message": (f"{text}: a submission must behave the same whether or not it is probed, and looking "
                                "at the probe's process, files or kit is treated as gaming the probe")[:2000],
                    "location": {"path": path, "line": line}})

    def _where(self, frame):
        if frame is None:
            return "?", 1
        name = frame.f_code.co_filename
        rel = os.path.relpath(name, self.workspace) if name.startswith(self.workspace + "/") else name
        return rel, max(1, frame.f_lineno or 1)

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

    # ---- the import-time switch ------------------------------------------------------------------
    def find_spec(self, name, path=None, target=None):
        """A meta-path finder that finds nothing itself: it notices the kit's import (to configure it)
        and the first import of a workspace module (to hide the probe before it runs)."""
        if self.hidden or "." in name and not name.startswith(self.alias + "."):
            return None
        from importlib.machinery import PathFinder

        if name == self.alias and self.kit is None:
            spec = PathFinder.find_spec(name, path)
            if spec is not None and spec.loader is not None:
                spec.loader = _ConfiguringLoader(spec.loader, self)
            return spec
        if "." in name:
            return None
        spec = PathFinder.find_spec(name, path)
        if spec is None:
            return None
        places = [spec.origin] if spec.origin else list(spec.submodule_search_locations or [])
        if any(p and _real(p).startswith(self.workspace + "/") for p in places):
            self.hide()
        return None

    def kit_loaded(self, module) -> None:
        """The kit was imported: hand it its configuration and say so in the results (sealed), so the
        engine knows every later line must be sealed too."""
        self.kit = module
        module._conf.install(self.env, self.key, os.path.abspath(self.probe))
        self.kit_code = {n: getattr(module, n).__code__ for n in getattr(module, "__all__", [])
                         if hasattr(getattr(module, n, None), "__code__")}
        self.write({"probegate": "kit"})

    def hide(self) -> None:
        """The submission is about to be imported: make the process look like the official run's."""
        if self.hidden:
            return
        self.hidden = True
        for name in [n for n in sys.modules if n == PUBLIC_NAME or n.startswith(PUBLIC_NAME + ".")]:
            del sys.modules[name]
        if self.kit is not None:  # a probe without the kit reads its variables itself: leave them
            for k in list(os.environ):
                if k.startswith("PROBEGATE_"):
                    del os.environ[k]
            if "pythonpath" in self.conf:
                os.environ["PYTHONPATH"] = self.conf["pythonpath"]
        if self.conf.get("argv"):
            sys.argv[:] = list(self.conf["argv"])
            # __main__ names the probe script; the official run's __main__ is the runner's (pytest's).
            main = sys.modules.get("__main__")
            if main is not None and getattr(main, "__file__", None) == os.path.abspath(self.probe):
                main.__file__ = self.conf["argv"][0]
                self.main_hidden = main

    def as_launched(self):
        """A context in which the process is as the probe started: __main__.__file__ is the probe
        script and PROBEGATE_* are in os.environ. run_ranks starts its ranks in it: multiprocessing
        imports the probe as __mp_main__ from that file in a process with that environment (a
        forkserver, or a spawned rank), and the probe's top level (its `param()` calls) runs there
        before the rank's guard is configured. The rank takes them out again before fn runs."""
        import contextlib

        @contextlib.contextmanager
        def restored():
            main = self.main_hidden
            shown = main.__file__ if main is not None else None
            if main is not None:
                main.__file__ = os.path.abspath(self.probe)
            added = [k for k in self.env if k not in os.environ] if self.kit is not None else []
            for k in added:
                os.environ[k] = self.env[k]
            try:
                yield
            finally:
                if main is not None:
                    main.__file__ = shown
                for k in added:
                    os.environ.pop(k, None)
        return restored()

    def finish(self) -> None:
        """The probe ran to its end: the kit's own functions must still be the kit's."""
        for name, code in self.kit_code.items():
            fn = getattr(self.kit, name, None)
            if fn is not None and getattr(fn, "__code__", code) is not code:
                self.report(f"replaced the code of the probe kit's {name}", None)

    def rank_conf(self) -> dict:
        """What a rank process needs to guard itself the same way (run_ranks hands it over)."""
        return dict(self.conf, env=self.env, probe=self.probe)


class _ConfiguringLoader:
    def __init__(self, loader, guard):
        self.loader = loader
        self.guard = guard

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.guard.kit_loaded(module)

    def __getattr__(self, name):
        return getattr(self.loader, name)


def start(conf: dict, probe: str) -> Guard:
    """Starts the guard of this process (the launcher; a rank through start_rank)."""
    global _active
    g = Guard(conf, probe)
    g._open_results()
    sys.meta_path.insert(0, g)
    sys.addaudithook(g.hook)
    _active = g
    return g


def active():
    """The guard of this process, or None (the kit run by hand)."""
    return _active


def start_rank(conf: dict, kit_module, rank: int) -> None:
    """In a rank process of run_ranks, before fn runs: configure the kit, hide, and watch as the parent does
    (what it sees is reported as `<probe>.rank<N>.integrity`)."""
    g = start(conf, conf.get("probe", "probe"))
    g.probe_id = f"{g.probe_id}.rank{rank}"
    g.env = dict(conf.get("env") or {})  # the rank's os.environ is the parent's, already without PROBEGATE_*
    g._open_results()
    g.kit = kit_module
    kit_module._conf.install(g.env, g.key, os.path.abspath(g.probe))
    g.hide()
