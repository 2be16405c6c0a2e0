"""tasks/megatron-ddp-gate: the setup's ModelOpt stand-ins (one importer only), and the probe's failing
interface/defaults checks (they emit a failed check, not a crashed probe)."""
import os
import subprocess
import sys
import json
import textwrap

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SETUP = os.path.join(ROOT, "tasks", "megatron-ddp-gate", "setup")
PROBE_PATH = os.pathsep.join([os.path.join(ROOT, "probes", "kit"), os.path.join(ROOT, "probes", "megatron-ddp-gate")])


def _tree(tmp_path, real_modelopt=False):
    files = {
        "megatron/__init__.py": "",
        "megatron/post_training/__init__.py": "",
        # As upstream's megatron/post_training/utils.py: ModelOpt at module level.
        "megatron/post_training/utils.py": "import modelopt\nimport modelopt.torch.quantization as mtq\n"
                                           "from modelopt.torch.quantization.utils import is_quantized\n",
        # Elsewhere in Megatron: an availability probe, which must keep seeing ModelOpt absent.
        "megatron/probe_user.py": "try:\n    import modelopt\n    HAVE = True\nexcept ImportError:\n    HAVE = False\n",
    }
    if real_modelopt:
        files["modelopt/__init__.py"] = "REAL = True\n"
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _run(tmp_path, code):
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.path.abspath(SETUP)}"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, env=env, capture_output=True, text=True)


def test_stub_serves_only_post_training_utils(tmp_path):
    _tree(tmp_path)
    proc = _run(tmp_path, """
        import sys, probegate_modelopt_stub
        assert probegate_modelopt_stub.install()
        assert not probegate_modelopt_stub.install()  # once
        import megatron.post_training.utils as u
        assert not any(n == "modelopt" or n.startswith("modelopt.") for n in sys.modules), sorted(sys.modules)
        import megatron.probe_user
        assert megatron.probe_user.HAVE is False
        try:
            u.is_quantized(None)
        except ImportError as e:
            assert "not installed" in str(e)
        else:
            raise AssertionError("a stand-in must not return a value")
        try:
            import modelopt
        except ImportError:
            print("ok")
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_real_modelopt_is_left_alone(tmp_path):
    _tree(tmp_path, real_modelopt=True)
    proc = _run(tmp_path, """
        import probegate_modelopt_stub
        assert not probegate_modelopt_stub.install()
        import modelopt
        assert modelopt.REAL
        print("ok")
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_probe_failed_interface_and_defaults_are_checks_not_crashes(tmp_path):
    """A changed default (the changed-default injection on #6438) crashed the probe: its measured
    values were lists, which emit() refuses; the checks must fail with counts as their figures."""
    for side, names in (("base", "a, b"), ("head", "a")):
        d = tmp_path / side / "megatron" / "core" / "distributed"
        d.mkdir(parents=True)
        (d / "__init__.py").write_text(f"from .x import {names}\n")
    code = textwrap.dedent(f"""
        import probe_differential as pd
        from probegate_probe.differential import Sides
        pd.check_interface({str(tmp_path / "base")!r}, {str(tmp_path / "head")!r})
        facts = lambda d: [{{"outputs": {{"facts": {{"defaults": d}}}}}}]
        pd.check_defaults(Sides(world_size=1, counts={{"base": facts({{"x": "False", "y": "1"}}), "head": facts({{"x": "True", "y": "1"}})}}))
    """)
    env = {**os.environ, "PYTHONPATH": PROBE_PATH}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    checks = {c["id"]: c for c in map(json.loads, proc.stdout.strip().splitlines())}
    assert checks["interface-kept"]["status"] == "failed" and checks["interface-kept"]["measured"] == {"removed_names": 1}
    assert "__init__:b" in checks["interface-kept"]["message"]
    assert checks["defaults-kept"]["status"] == "failed" and checks["defaults-kept"]["measured"] == {"changed_defaults": 1}
    assert "x: True (base False)" in checks["defaults-kept"]["message"]
