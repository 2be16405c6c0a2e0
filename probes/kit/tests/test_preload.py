"""run_ranks(preload=...): the rank server imports a probe's heavy packages once (issue 27), and
never the submission's code (issue 29: it would run before the guard hides the probe)."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from probegate_probe import run_ranks

KIT = pathlib.Path(__file__).resolve().parents[1]

# Its own process: the forkserver keeps what it preloaded on a process's first run_ranks call, and
# this test session's server started long before.
SCRIPT = """\
import json
import sys

from probegate_probe import run_ranks


def seen(rank, n):
    return ["wave" in sys.modules, "colorsys" in sys.modules]


if __name__ == "__main__":
    print(json.dumps({"preloaded": run_ranks(seen, preload=["wave"]), "later": run_ranks(seen, preload=["colorsys"])}))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the forkserver start method")
def test_preloaded_modules_are_in_every_rank_before_fn_runs(tmp_path):
    probe = tmp_path / "probe_preload.py"
    probe.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROBEGATE_")}
    env.update(PYTHONPATH=str(KIT), PROBEGATE_BACKEND="gloo", PROBEGATE_WORLD_SIZE="2", PROBEGATE_WORKSPACE=str(tmp_path))
    proc = subprocess.run([sys.executable, str(probe)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["preloaded"] == [[True, False], [True, False]]
    # The server was started with the first call's list: a name asked for later is not preloaded
    # (each rank imports it when it needs it), as the docstring says.
    assert out["later"] == [[True, False], [True, False]]


def _never_runs(rank, n):
    raise AssertionError("no rank may start when preload is refused")


def test_preload_refuses_the_submissions_code(fake_workspace):
    with pytest.raises(ValueError, match=r"preload: 'subpkg.mod' is the submission's code .*before the guard hides the probe"):
        run_ranks(_never_runs, world_size=2, backend="gloo", preload=["json", "subpkg.mod"])


def test_preload_refuses_what_is_not_a_list_of_module_names():
    with pytest.raises(TypeError, match="a list of module names"):
        run_ranks(_never_runs, world_size=2, backend="gloo", preload="numpy")
    with pytest.raises(ValueError, match="is not a module name"):
        run_ranks(_never_runs, world_size=2, backend="gloo", preload=["numpy; import os"])
