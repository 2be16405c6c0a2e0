"""A stand-in for NVIDIA ModelOpt (`modelopt`), for one importer only: megatron.post_training.utils.

The repository's test harness (tests/unit_tests/conftest.py -> tests/unit_tests/dist_checkpointing ->
megatron.training) imports megatron.training.checkpointing, which imports
megatron.post_training.utils lazily (inside a function), except in the window between upstream's
bf71c142b5 (#6247, 2026-08-05 10:36 UTC) and its revert a54bd8cc17 (#6302, 2026-08-06 02:00 UTC), where it
imports it at module level; that module imports `modelopt` at module level. ModelOpt is not in the
task's environment (a CUDA quantization toolkit; the DDP subsystem and its tests never use it), so
in that window conftest.py cannot load and the official tests do not run, at the PR's base and
head alike (PR #6234 `9f3fe8c92` was judged official-failed for it: a false rejection).

install() adds an import finder for megatron.post_training.utils alone, when the real `modelopt` is
not installed: while that one module executes, `modelopt` and its submodules are empty stand-ins;
when it is done they leave sys.modules again, so any other importer (a `try: import modelopt`
availability probe anywhere in Megatron) still gets ImportError and no code path switches to
ModelOpt. A stand-in's attribute raises ImportError if it is ever called. Installed by the official
tests' pytest plugin only (the probe does not import megatron.training), the same for the base and
the head; in a tree that imports the module lazily it is never reached.
"""
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

IMPORTER = "megatron.post_training.utils"


class _Absent:
    """A name of the stand-in module: an error if it is used, never silently a value."""

    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise ImportError(f"{self._name}: NVIDIA ModelOpt is not installed in this gate's environment (probegate_modelopt_stub)")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Absent(f"{self._name}.{attr}")


class _StubModule(types.ModuleType):
    __version__ = "0.0.0+probegate-stub"

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Absent(f"{self.__name__}.{attr}")


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves empty `modelopt` modules (only ever on sys.meta_path while IMPORTER executes)."""

    def find_spec(self, fullname, path, target=None):
        if fullname == "modelopt" or fullname.startswith("modelopt."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


class _ScopedLoader(importlib.abc.Loader):
    """IMPORTER's own loader, executing it with the stand-ins importable, then removing them."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, attr):  # get_source, get_code, ...: the real loader's
        return getattr(self._loader, attr)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        finder = _StubFinder()
        sys.meta_path.insert(0, finder)
        try:
            self._loader.exec_module(module)
        finally:
            sys.meta_path.remove(finder)
            for name in [n for n in sys.modules if n == "modelopt" or n.startswith("modelopt.")]:
                del sys.modules[name]


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != IMPORTER:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _ScopedLoader(spec.loader)
        return spec


def install() -> bool:
    """Adds the finder when ModelOpt is not installed; True when it did."""
    if any(isinstance(f, _Finder) for f in sys.meta_path):
        return False
    if importlib.util.find_spec("modelopt") is not None:
        return False
    sys.meta_path.insert(0, _Finder())
    return True
