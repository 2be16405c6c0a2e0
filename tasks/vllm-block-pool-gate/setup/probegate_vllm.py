"""Judge-owned stand-in for `vllm/__init__.py` (loaded with `pytest -p probegate_vllm`, imported by the probes).

vLLM's package `__init__` imports the whole serving stack at once (engine, OpenAI entrypoints, model registry,
Ray executor), which needs vLLM's compiled CUDA extensions and some forty serving packages. The KV-cache code
this task is about (vllm/v1/core) imports none of that. Like vLLM's own python-only development setups, this
module registers the workspace's `vllm` folder as the package without running its `__init__`, so
`import vllm.v1.core.kv_cache_manager` loads the real modules of the workspace and nothing of the engine.
"""

import importlib.machinery
import importlib.util
import os
import sys


def _install() -> None:
    if "vllm" in sys.modules:
        return
    root = os.environ.get("PROBEGATE_WORKSPACE") or os.getcwd()
    pkg_dir = os.path.join(root, "vllm")
    if not os.path.isfile(os.path.join(pkg_dir, "__init__.py")):
        raise ImportError(f"probegate_vllm: no vllm package at {pkg_dir} (PROBEGATE_WORKSPACE={root!r})")
    spec = importlib.machinery.ModuleSpec("vllm", None, is_package=True)
    spec.submodule_search_locations = [pkg_dir]
    module = importlib.util.module_from_spec(spec)
    module.__file__ = os.path.join(pkg_dir, "__init__.py")
    sys.modules["vllm"] = module
    # What vllm/__init__ sets up before anything else (version first, then the env overrides).
    from vllm.version import __version__, __version_tuple__  # noqa: E402

    module.__version__ = __version__
    module.__version_tuple__ = __version_tuple__


_install()
