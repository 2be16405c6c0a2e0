"""The launcher and the guard (issue 29), run as the engine runs them: the kit copied under its own
package name behind `probegate_probe`, the configuration on stdin, the probe as __main__."""
import json
import os

import _guarded

SUBMISSION = '''
import inspect, os, sys
SEEN = {
    "env": sorted(k for k in os.environ if k.startswith("PROBEGATE_")),
    "module": "probegate_probe" in sys.modules,
    "argv0": sys.argv[0],
    "main_file": sys.modules["__main__"].__file__,
    "pythonpath": os.environ.get("PYTHONPATH"),
}
def look():
    return [f.filename for f in inspect.stack()]
'''

PROBE = '''
import json
from probegate_probe import emit, param
import sub
emit("seen", "functional", "passed", message=json.dumps(sub.SEEN), measured={"n": param("n", 0)})
sub.look()
'''


def _layout(tmp_path):
    return _guarded.layout(tmp_path, {"sub.py": SUBMISSION}, PROBE)


_run = _guarded.run
_unseal = _guarded.unseal


def test_the_submission_sees_the_official_run_and_its_looking_is_reported(tmp_path):
    kit, ws, probes = _layout(tmp_path)
    key = os.urandom(32)
    run, lines = _run(tmp_path, kit, ws, probes, key)
    assert run.returncode == 0, run.stderr
    records = [_unseal(line, key) for line in lines]  # every line sealed
    assert records[0] == {"probegate": "kit"}
    seen = next(r for r in records if r.get("id") == "seen")
    sub = json.loads(seen["message"])
    assert sub["env"] == [] and sub["module"] is False, sub
    assert sub["argv0"].endswith(os.path.join("pytest", "__main__.py")), sub
    assert sub["main_file"] == sub["argv0"] and sub["pythonpath"] == str(ws), sub
    assert seen["measured"] == {"n": 7}  # the kit kept its copy of the drawn parameters
    integrity = next(r for r in records if r.get("id") == "probe-look.integrity")
    assert integrity["status"] == "failed" and integrity["location"] == {"path": "sub.py", "line": 11}
    assert "inspected the call stack" in integrity["message"]


def test_a_probe_without_the_kit_keeps_its_variables(tmp_path):
    kit, ws, probes = _layout(tmp_path)
    (probes / "probe_look.py").write_text(
        "import json, os\nimport sub\n"
        "open(os.environ['PROBEGATE_RESULTS'], 'a').write(json.dumps({'id': 'plain', 'category': 'functional', 'status': 'passed'}) + '\\n')\n")
    run, lines = _run(tmp_path, kit, ws, probes, os.urandom(32))
    assert run.returncode == 0, run.stderr
    assert [json.loads(line)["id"] for line in lines] == ["plain"]


RANKS_PROBE = '''
import json
from probegate_probe import emit, param, run_ranks

N = param("n", 0)  # evaluated again in each rank, when it imports this file


def on_rank(rank, size):
    import sub
    return N, sub.SEEN


if __name__ == "__main__":
    import sub  # the probe process itself switches first (PROBEGATE_* out of os.environ, __main__ renamed)
    emit("ranks", "functional", "passed", message=json.dumps(run_ranks(on_rank, world_size=2, backend="gloo")))
'''


def test_ranks_get_the_drawn_values_and_the_same_hiding(tmp_path):
    kit, ws, probes = _layout(tmp_path)
    (probes / "probe_look.py").write_text(RANKS_PROBE)
    key = os.urandom(32)
    run, lines = _run(tmp_path, kit, ws, probes, key)
    assert run.returncode == 0, run.stderr
    records = [_unseal(line, key) for line in lines]
    ranks = json.loads(next(r for r in records if r.get("id") == "ranks")["message"])
    for n, seen in ranks:
        assert n == 7, ranks  # the probe's top level saw the drawn value in the rank too
        assert seen["env"] == [] and seen["module"] is False, seen
        assert seen["argv0"].endswith(os.path.join("pytest", "__main__.py")), seen


OWN_DEFAULTS = '''
from typing import NamedTuple
class Request(NamedTuple):
    fn: object = None
    args: tuple = ()
def scale(x, k=1):
    return x * k
scale.__defaults__ = (2,)
SEEN = {"ok": Request().args == () and scale(3) == 6}
'''

OWN_PROBE = '''
import json
from probegate_probe import emit
import sub
emit("own", "functional", "passed" if sub.SEEN["ok"] else "failed")
'''


def test_a_submission_setting_its_own_defaults_is_not_gaming(tmp_path):
    """A NamedTuple with defaults (the standard library sets __new__.__defaults__) and a submission
    changing its own function's defaults are ordinary code, not a swap of the kit's or the probe's."""
    kit, ws, probes = _layout(tmp_path)
    (ws / "sub.py").write_text(OWN_DEFAULTS)
    (probes / "probe_look.py").write_text(OWN_PROBE)
    key = os.urandom(32)
    run, lines = _run(tmp_path, kit, ws, probes, key)
    assert run.returncode == 0, run.stderr
    records = [_unseal(line, key) for line in lines]
    assert [r["id"] for r in records if r.get("id")] == ["own"], records
    assert next(r for r in records if r.get("id") == "own")["status"] == "passed"
