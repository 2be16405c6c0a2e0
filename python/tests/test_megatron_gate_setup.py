"""tasks/megatron-ddp-gate/setup/probegate_modelopt_stub.py: ModelOpt stand-ins for one importer only."""
import os
import subprocess
import sys
import textwrap

SETUP = os.path.join(os.path.dirname(__file__), "..", "..", "tasks", "megatron-ddp-gate", "setup")


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
