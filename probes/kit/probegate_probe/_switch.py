"""The guard's import-time switch: the moment the probe process starts to look like the official run
(issue 29; docs/sandbox.md, "Gaming defences").

A meta-path finder that finds nothing itself notices two imports: the kit's (under its per-evaluation
name: the guard hands it its configuration and the seal key, `kit_loaded`) and the first import of a
module whose file lies in the workspace (the submission is about to run: the guard hides the probe,
`hide`). Standard library only: the launcher loads the guard before anything else.
"""
from __future__ import annotations

import os


class ImportSwitch:
    """The import half of the guard (mixed into `_guard.Guard`): uses its `hidden`, `alias`, `kit`,
    `workspace`, `env`, `key`, `probe`, `hide()` and `write()`."""

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
        if any(p and os.path.realpath(p).startswith(self.workspace + "/") for p in places):
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


class _ConfiguringLoader:
    """The kit's own loader, wrapped: the guard configures the kit the moment it has been executed."""

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
