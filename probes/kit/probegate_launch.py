"""Starts one probe process the way the engine wants it seen (issue 29; docs/sandbox.md, "Gaming defences").

The engine runs `python probegate_launch.py PROBE [ARGS…]` in place of `python PROBE [ARGS…]` and
writes one JSON line on stdin: the seal key, the kit's per-evaluation package name, the official
command's argv and PYTHONPATH, the workspace and the paths the submission must not look at. This
file then points stdin at /dev/null (as the official tests have it), loads the guard from the kit's
folder (standard library only: a probe that never imports the kit pays no torch import for it),
starts it, and runs the probe as `__main__`. Run by hand, with nothing on stdin, it just runs the probe.
"""
import importlib.util
import json
import os
import sys


def official_argv(command) -> list:
    """sys.argv as the interpreter gives it to the official command (`python -m pytest -q …` →
    [<pytest's __main__.py>, '-q', …])."""
    if not command:
        return []
    rest = list(command[1:])
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
        rest.pop(0)  # interpreter flags
    if rest[:1] == ["-m"] and len(rest) > 1:
        import importlib.util

        try:
            spec = importlib.util.find_spec(rest[1])
        except (ImportError, ValueError):
            spec = None
        origin = None
        if spec is not None:
            locations = list(spec.submodule_search_locations or [])
            origin = os.path.join(locations[0], "__main__.py") if locations else spec.origin
        return [origin or rest[1]] + rest[2:]
    if rest[:1] == ["-c"]:
        return ["-c"] + rest[2:]
    return rest


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: probegate_launch.py PROBE [ARGS...] (configuration as one JSON line on stdin)")
    line = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.readline()
    conf = json.loads(line) if line.strip() else {}
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    here = os.path.dirname(os.path.abspath(__file__))
    package = conf.get("kit") or "probegate_probe"
    spec = importlib.util.spec_from_file_location(f"{package}._guard", os.path.join(here, package, "_guard.py"))
    guard = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = guard  # the kit's `from . import _guard` finds this one
    spec.loader.exec_module(guard)
    command = conf.get("command") or []
    if command:
        conf["argv"] = official_argv(command)
        if "-m" in command[1:-1]:
            conf.setdefault("preload", [command[command.index("-m", 1) + 1]])
    probe = os.path.abspath(sys.argv[1])
    sys.argv[:] = sys.argv[1:]
    sys.path[0] = os.path.dirname(probe)  # as `python PROBE` has it: the probe's folder first
    g = guard.start(conf, probe)
    for name in conf.get("preload", []):  # what the official run has imported (pytest), so it is here too
        try:
            __import__(name)
        except Exception:
            pass
    import runpy

    try:
        runpy.run_path(probe, run_name="__main__")
    finally:
        g.finish()


if __name__ == "__main__":
    main()
