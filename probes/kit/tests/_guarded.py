"""Runs a probe as the engine does (issue 29): the kit copied under its own package name behind
`probegate_probe`, the configuration on stdin, the probe as __main__ through the launcher, each
results line sealed. Shared by the guard's tests."""
import hashlib
import hmac
import json
import os
import pathlib
import shutil
import subprocess
import sys

KIT = pathlib.Path(__file__).resolve().parents[1]
ALIAS = "_mtest0kit"


def layout(tmp_path, submission: dict, probe: str):
    """kit/ (under ALIAS), workspace/ with the files `submission` names, probes/probe_look.py."""
    kit = tmp_path / "kit"
    shutil.copytree(KIT, kit, ignore=shutil.ignore_patterns("tests", "__pycache__"))
    (kit / "probegate_probe").rename(kit / ALIAS)
    (kit / "probegate_probe").mkdir()
    (kit / "probegate_probe" / "__init__.py").write_text(
        "import importlib as _i, sys as _s\n"
        f"_kit = _i.import_module({ALIAS!r})\n"
        "for _n, _m in list(_s.modules.items()):\n"
        f"    if _n.startswith({ALIAS + '.'!r}):\n"
        f"        _s.modules['probegate_probe' + _n[{len(ALIAS)}:]] = _m\n"
        "_s.modules[__name__] = _kit\n")
    ws = tmp_path / "workspace"
    ws.mkdir()
    for name, text in submission.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    probes = tmp_path / "probes"
    probes.mkdir()
    (probes / "probe_look.py").write_text(probe)
    return kit, ws, probes


def run(tmp_path, kit, ws, probes, key, python=sys.executable, extra_path=(), timeout=300, args=()):
    """(CompletedProcess, results lines) of `python probegate_launch.py probes/probe_look.py`."""
    results = tmp_path / "results.jsonl"
    results.write_text("")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": ":".join([str(ws), str(kit), str(probes), *map(str, extra_path)]),
           "PROBEGATE_RESULTS": str(results), "PROBEGATE_PARAMS": json.dumps({"n": 7}), "PROBEGATE_WORKSPACE": str(ws),
           "PROBEGATE_BACKEND": "gloo"}
    conf = {"key": key.hex(), "kit": ALIAS, "command": [python, "-m", "pytest", "-q", "tests"],
            "pythonpath": str(ws), "workspace": str(ws), "watched": [str(kit), str(probes), str(results)]}
    proc = subprocess.run([python, str(kit / "probegate_launch.py"), str(probes / "probe_look.py"), *args], cwd=ws, env=env,
                          input=json.dumps(conf) + "\n", capture_output=True, text=True, timeout=timeout)
    return proc, results.read_text().splitlines()


def unseal(line, key):
    body, _, seal = line.rpartition(', "seal": "')
    body += "}"
    assert hmac.new(key, body.encode(), hashlib.sha256).hexdigest() == seal[:-2], line
    return json.loads(body)


def records(lines, key):
    return [unseal(line, key) for line in lines]
