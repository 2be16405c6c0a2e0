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

Three files, one idea each: this one holds the guard's state, what it writes and what it does to the
process (`hide`, `as_launched`, `finish`); `_watch.py` the audit hook, `_switch.py` the meta-path
finder that decides when to hide.
"""
from __future__ import annotations

import hashlib
import hmac
import importlib.util
import json
import os
import re
import sys
import threading


def _sibling(name: str):
    """A module of the kit's folder, loaded from its file without importing the kit: the launcher
    loads this file before anything else (the kit's __init__ imports torch, and its import must go
    through the guard's finder)."""
    package = __name__.rpartition(".")[0]
    full = f"{package}.{name}" if package else name
    module = sys.modules.get(full)
    if module is None:
        spec = importlib.util.spec_from_file_location(full, os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
    return module


_watch = _sibling("_watch")
_switch = _sibling("_switch")
PUBLIC_NAME = _watch.PUBLIC_NAME
_real = _watch._real

_active = None  # the guard of this process, once started


class Guard(_watch.AuditWatch, _switch.ImportSwitch):
    """One process's guard: configuration from the engine, the results descriptor, what was seen;
    the audit hook (`hook`) and the meta-path finder (`find_spec`) come from the two mixins."""

    def __init__(self, conf: dict, probe: str):
        self.conf = conf
        self.probe = probe
        self.probe_id = re.sub(r"[^a-z0-9.-]+", "-", os.path.splitext(os.path.basename(probe))[0].lower()).strip("-") or "probe"
        self.key = bytes.fromhex(conf["key"]) if conf.get("key") else None
        self.workspace = _real(conf.get("workspace") or os.getcwd())
        self.watched = tuple(_real(p) for p in conf.get("watched", []) if p)
        self.alias = conf.get("kit") or PUBLIC_NAME
        self.stdlib = _watch.stdlib_folders()
        self.libraries = _watch.library_folders(self.stdlib, (self.workspace,) + self.watched)  # third-party, even inside the stdlib's folder
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

    def report(self, what: str, frame, how: str = "") -> None:
        """The submission did something that looks for the probe: the first becomes a failed check.
        `how`: how the act reached that frame, when not directly (`through inspect.stack`)."""
        path, line = self._where(frame)
        # how (through traceback.extract_stack, handed to a library) after the place: the place stays where readers look for it
        text = f"submission code {what} ({path}:{line}){f' {how},' if how else ''} while it was being probed"
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
