"""The guard blames the submission only for what its own code does (issue 38, item 5): third-party
code (site-packages / dist-packages, wherever the environment puts them) reading frames is not the
PR's, the workspace is the submission's wherever it lies, and a frame read laundered through a
library (a callable handed to it) still is. Each case runs as the engine runs it (the launcher, the
configuration on stdin, sealed lines), one process per case: the guard reports one act per process."""
import glob
import json
import os
import subprocess
import sys

import pytest

import _guarded
from probegate_probe import _guard

FAKELIB = '''
import sys
import traceback


def where():
    # A library's own frame read, as torch's FakeTensorMode does it (traceback.extract_stack()).
    return len(traceback.extract_stack())


def frame_depth():
    return sys._getframe(0).f_lineno


def call(fn, *args):
    # A library calling what it was handed (torch.utils._pytree.tree_map, a hook registry).
    return fn(*args)
'''

SUBMISSION = '''import sys
import traceback

import fakelib


def lib_reads():
    return fakelib.where() + fakelib.frame_depth()


def reads_directly():
    return len(traceback.extract_stack())


def getframe():
    return sys._getframe(0).f_lineno


def launders_getframe():
    return fakelib.call(sys._getframe, 0)


def launders_extract_stack():
    return fakelib.call(traceback.extract_stack)


def writes_a_module():
    import os, tempfile
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "helper.py"), "w") as fh:
        fh.write("import traceback\\ndef look():\\n    return traceback.extract_stack()\\n")
    sys.path.insert(0, folder)
    import helper
    return helper.look()
'''
LINE = {text[4:text.index("(")]: n + 2 for n, text in enumerate(SUBMISSION.splitlines()) if text.startswith("def ")}  # its first line

# No kit, no torch: the guard watches a probe that never imports the kit too, so this runs on any interpreter.
PROBE = '''
import json, os, sys
case = sys.argv[1]  # before the submission is imported: then argv becomes the official run's
import sub
value = getattr(sub, case)()
with open(os.environ["PROBEGATE_RESULTS"], "a") as fh:
    fh.write(json.dumps({"id": "ran", "category": "functional", "status": "passed"}) + "\\n")
'''


def _library(tmp_path, where):
    """A folder holding `fakelib` as the environment would, and the interpreter and sys.path that see it."""
    if where == "venv":
        # uv's task environments: the venv's lib/python3.X (sysconfig's platstdlib) holds site-packages.
        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True,
                              capture_output=True, text=True).stdout.strip()
        return python, site, ()
    folder = tmp_path / "lib" / where
    folder.mkdir(parents=True)
    return sys.executable, str(folder), (str(folder),)


def _case(tmp_path, where, case):
    python, site, extra = _library(tmp_path, where)
    os.makedirs(os.path.join(site, "fakelib"), exist_ok=True)
    with open(os.path.join(site, "fakelib", "__init__.py"), "w") as fh:
        fh.write(FAKELIB)
    kit, ws, probes = _guarded.layout(tmp_path, {"sub.py": SUBMISSION}, PROBE)
    key = os.urandom(32)
    proc, lines = _guarded.run(tmp_path, kit, ws, probes, key, python=python, extra_path=extra, args=(case,))
    assert proc.returncode == 0, proc.stderr
    # the probe's own line is plain (it has no kit); the guard's are sealed
    records = [_guarded.unseal(line, key) if '"seal": ' in line else json.loads(line) for line in lines]
    return [r for r in records if r.get("id", "").endswith(".integrity")], records


@pytest.mark.parametrize("where", ["venv", "site-packages", "dist-packages", "vendor"])  # vendor: on sys.path at start
def test_a_library_reading_frames_for_the_submission_is_not_its_act(tmp_path, where):
    integrity, records = _case(tmp_path, where, "lib_reads")
    assert integrity == [], integrity
    assert [r["id"] for r in records if r.get("id")] == ["ran"]


CALL_LINE = FAKELIB.splitlines().index("    return fn(*args)") + 1


@pytest.mark.parametrize("case, how", [
    ("reads_directly", " through traceback.extract_stack,"),
    ("getframe", ""),
    ("launders_getframe", f" handed as a callable to fakelib/__init__.py:{CALL_LINE} (call),"),
    ("launders_extract_stack", f" through traceback.extract_stack, handed as a callable to fakelib/__init__.py:{CALL_LINE} (call),"),
    ("writes_a_module", " through traceback.extract_stack,"),  # a folder it put on sys.path is no library
])
def test_the_submission_reading_frames_itself_or_through_a_library_is_named(tmp_path, case, how):
    integrity, _ = _case(tmp_path, "venv", case)
    assert len(integrity) == 1, integrity
    got = integrity[0]
    line = LINE[case] + (6 if case == "writes_a_module" else 0)
    assert got["status"] == "failed" and got["location"] == {"path": "sub.py", "line": line}, got
    assert got["message"].startswith(f"submission code inspected the call stack (sys._getframe) (sub.py:{line}){how} while it was "
                                     "being probed:"), got["message"]


def test_paths_are_classified_by_whose_code_they_hold(tmp_path):
    ws = tmp_path / "env" / "lib" / "python3.11" / "site-packages" / "ws"  # a workspace inside a site-packages folder
    g = _guard.Guard({"workspace": str(ws), "watched": [str(tmp_path / "kit")]}, "probe_x.py")
    venv = str(tmp_path / "env" / "lib" / "python3.11")
    g.stdlib = (venv + "/", "/usr/lib/python3.11/")
    g.libraries = (venv + "/site-packages/",)
    assert g._origin(f"{ws}/pkg/mod.py") == "submission"
    assert g._origin(f"{venv}/site-packages/torch/_subclasses/fake_tensor.py") == "library"
    assert g._origin("/usr/lib/python3/dist-packages/torch/_tensor.py") == "library"  # Debian's torch
    assert g._origin("/usr/lib/python3.11/dist-packages/numpy/__init__.py") == "library"
    assert g._origin("/usr/lib/python3.11/inspect.py") == "stdlib"
    assert g._origin("/usr/lib/python3.11/importlib/__init__.py") == "import"
    assert g._origin("<frozen importlib._bootstrap>") == "import"
    assert g._origin("<frozen os>") == "stdlib"
    assert g._origin("<string>") == "made"
    assert g._origin(f"{tmp_path}/kit/_m1/ranks.py") == "probe"


def test_the_environments_package_folders_are_libraries():
    import site
    import sysconfig

    g = _guard.Guard({"workspace": "/nonexistent-ws"}, "probe_x.py")
    for folder in site.getsitepackages() + [sysconfig.get_paths()["purelib"]]:
        assert g._origin(os.path.join(folder, "somepkg", "mod.py")) == "library", (folder, g.libraries, g.stdlib)
    assert g._origin(os.path.join(sysconfig.get_paths()["stdlib"], "inspect.py")) == "stdlib"


# ---- torch >= 2: DTensor's clip_grad_norm_ (torchtitan's) on two gloo ranks --------------------------

CLIPPER = '''
import torch
from torch.distributed.tensor import DTensor


@torch.no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, foreach=None):
    # torchtitan/distributed/utils.py's clip_grad_norm_, without pipeline or expert parallelism
    parameters = list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = torch.nn.utils.get_total_norm(grads, norm_type, False, foreach)
    if isinstance(total_norm, DTensor):
        total_norm = total_norm.full_tensor()
    torch.nn.utils.clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def _scaled_sum(x, k):
    return (x * k).sum()


def compiled_sum(x, k):
    return torch.compile(_scaled_sum, backend="eager", fullgraph=True)(x, k)
'''

CLIP_PROBE = '''
import json
from probegate_probe import emit, run_ranks


def on_rank(rank, size):
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor
    import clipper

    mesh = init_device_mesh("cpu", (size,))
    params = [torch.nn.Parameter(distribute_tensor(torch.ones(8, 4), mesh, [Shard(0)])) for _ in range(2)]
    for p in params:
        p.grad = distribute_tensor(torch.full((8, 4), 3.0), mesh, [Shard(0)])
    norm = clipper.clip_grad_norm_(params, 1.0)
    extra = clipper.compiled_sum(torch.ones(4), 0.0)  # dynamo reads frames too
    return float(norm + extra), float(params[0].grad.full_tensor().abs().max())


if __name__ == "__main__":
    for call in range(2):  # two calls: each rank process of each reports its own integrity check
        emit(f"clip-{call}", "functional", "passed", message=json.dumps(run_ranks(on_rank, world_size=2, backend="gloo")))
'''


def _torch2_python():
    """An interpreter with torch >= 2: this one, else a task environment the CI install built."""
    import torch

    if int(torch.__version__.split(".")[0]) >= 2:
        return sys.executable, torch.__version__
    for desc in sorted(glob.glob("/var/cache/probegate/envs/*/probegate-env.json")):
        try:
            with open(desc) as fh:
                version = json.load(fh).get("torch", "")
        except (OSError, ValueError):
            continue
        python = os.path.join(os.path.dirname(desc), "bin", "python")
        if version.split(".")[0].isdigit() and int(version.split(".")[0]) >= 2 and os.access(python, os.X_OK):
            return python, version
    return None, torch.__version__


def test_dtensor_clip_grad_norm_under_the_guard_is_no_integrity_failure(tmp_path):
    python, version = _torch2_python()
    if python is None:
        pytest.skip(f"DTensor needs torch >= 2: this interpreter has torch {version} and no task environment under "
                    "/var/cache/probegate/envs has torch 2 (the CI install builds them)")
    kit, ws, probes = _guarded.layout(tmp_path, {"clipper.py": CLIPPER}, CLIP_PROBE)
    key = os.urandom(32)
    proc, lines = _guarded.run(tmp_path, kit, ws, probes, key, python=python, timeout=600)
    assert proc.returncode == 0, proc.stderr
    records = _guarded.records(lines, key)
    assert [r for r in records if r.get("id", "").endswith(".integrity")] == [], (version, proc.stderr[-4000:])
    for call in range(2):
        ranks = json.loads(next(r for r in records if r.get("id") == f"clip-{call}")["message"])
        # two 8×4 gradients of 3s: norm sqrt(64 × 9) = 24, clipped to 1 / 24 of their size
        assert ranks == [[pytest.approx(24.0), pytest.approx(0.125)]] * 2, ranks
