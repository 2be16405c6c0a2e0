"""The weakened-test guard, one case per way a PR weakens a test, and the changes it must not flag."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from probegate_guard.__main__ import run

BASE_TEST = '''
import pytest
import torch

@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_sum(n):
    x = torch.ones(n)
    assert x.sum() == n
    torch.testing.assert_close(x.mean(), torch.tensor(1.0), atol=1e-6, rtol=0)

def test_raises():
    with pytest.raises(ValueError, match="bad size"):
        check(-1)

class TestBuffer:
    def test_keeps_grad(self):
        assert grad_of(1) is not None
        assert grad_of(2) is not None

def test_only_in_base():
    assert 1 + 1 == 2
'''


def tree(tmp_path, name, files):
    root = tmp_path / name
    for rel, src in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    return str(root)


def guard(tmp_path, head_test=None, extra_base=None, extra_head=None, allow=()):
    base = tree(tmp_path, "base", {"tests/test_x.py": BASE_TEST, **(extra_base or {})})
    head_files = dict(extra_head or {})
    if head_test is not None:
        head_files["tests/test_x.py"] = head_test
    head = tree(tmp_path, "head", head_files)
    return run(base, head, ["tests/**"], list(allow))


def kinds(result):
    return sorted((f["kind"], f["test"]) for f in result["findings"])


def test_untouched_tests_give_no_finding(tmp_path):
    r = guard(tmp_path, BASE_TEST)
    assert r["findings"] == []
    assert r["tests"] == {"base": 4, "head": 4}


def test_deleted_test_is_named_with_its_base_line(tmp_path):
    r = guard(tmp_path, BASE_TEST.replace("def test_only_in_base():\n    assert 1 + 1 == 2\n", ""))
    [f] = r["findings"]
    assert f["kind"] == "deleted" and f["test"] == "tests/test_x.py::test_only_in_base"
    assert f["file"] == "tests/test_x.py" and f["line"] == 20


def test_deleted_file_flags_every_test(tmp_path):
    r = guard(tmp_path, None, extra_head={"tests/other.py": "x = 1\n"})
    assert {f["kind"] for f in r["findings"]} == {"deleted"} and len(r["findings"]) == 4
    assert "its file was deleted" in r["findings"][0]["message"]


def test_renamed_away_test_is_deleted_but_a_moved_one_is_not(tmp_path):
    renamed = BASE_TEST.replace("def test_only_in_base():\n    assert 1 + 1 == 2", "def helper_only_in_base():\n    assert 1 + 1 == 3")
    assert kinds(guard(tmp_path / "a", renamed)) == [("deleted", "tests/test_x.py::test_only_in_base")]
    moved_away = BASE_TEST.replace("def test_only_in_base():\n    assert 1 + 1 == 2\n", "")
    r = guard(tmp_path / "b", moved_away, extra_head={"tests/test_moved.py": "def test_only_in_base():\n    assert 1 + 1 == 2\n"})
    assert r["findings"] == []


@pytest.mark.parametrize("decorator", ['@pytest.mark.skip(reason="flaky")', '@pytest.mark.xfail', '@pytest.mark.skipif(True, reason="later")'])
def test_skip_and_xfail_marks(tmp_path, decorator):
    r = guard(tmp_path, BASE_TEST.replace("def test_raises", f"{decorator}\ndef test_raises"))
    [f] = r["findings"]
    assert f["kind"] == "skipped" and f["test"] == "tests/test_x.py::test_raises" and f["line"] == 11


def test_skip_call_in_body_and_module_level_pytestmark(tmp_path):
    body = BASE_TEST.replace("        assert grad_of(1) is not None", "        pytest.skip('later')\n        assert grad_of(1) is not None")
    assert kinds(guard(tmp_path / "a", body)) == [("skipped", "tests/test_x.py::TestBuffer::test_keeps_grad")]
    marked = BASE_TEST.replace("import torch\n", "import torch\npytestmark = pytest.mark.skip(reason='wip')\n")
    assert len([f for f in guard(tmp_path / "b", marked)["findings"] if f["kind"] == "skipped"]) == 4


def test_deselected_through_configuration(tmp_path):
    base_cfg = {"pytest.ini": "[pytest]\naddopts = -q\n"}
    head_cfg = {"pytest.ini": "[pytest]\naddopts = -q --deselect tests/test_x.py::test_sum -k 'not raises'\n"}
    r = guard(tmp_path, BASE_TEST, extra_base=base_cfg, extra_head=head_cfg)
    msgs = [f["message"] for f in r["findings"]]
    assert all(f["kind"] == "deselected" and f["file"] == "pytest.ini" and f["line"] == 2 for f in r["findings"])
    assert any("--deselect tests/test_x.py::test_sum" in m for m in msgs) and any("-k not raises" in m for m in msgs)


def test_pyproject_testpaths_and_conftest_hook(tmp_path):
    head = {
        "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests/unit"]\n',
        "tests/conftest.py": "def pytest_collection_modifyitems(config, items):\n    items[:] = items[:1]\n",
    }
    r = guard(tmp_path, BASE_TEST, extra_head=head)
    got = {(f["kind"], f["file"], f["line"]) for f in r["findings"]}
    assert got == {("deselected", "pyproject.toml", 2), ("deselected", "tests/conftest.py", 1)}


def test_conftest_outside_the_watched_tests_is_no_finding(tmp_path):
    hook = "def pytest_generate_tests(metafunc):\n    pass\n"
    base = tree(tmp_path, "base", {"tests/core/test_x.py": BASE_TEST})
    head = tree(tmp_path, "head", {"tests/core/test_x.py": BASE_TEST, "tests/evals/conftest.py": hook, "tests/conftest.py": hook})
    r = run(base, head, ["tests/core/**"], [])
    assert {(f["kind"], f["file"]) for f in r["findings"]} == {("deselected", "tests/conftest.py")}


def test_narrowed_parametrization(tmp_path):
    r = guard(tmp_path, BASE_TEST.replace("[1, 2, 4, 8]", "[1, 2]"))
    [f] = r["findings"]
    assert f["kind"] == "narrowed" and f["line"] == 5 and "lost 2 of 4 cases: 4, 8" in f["message"]


def test_widened_parametrization_is_fine(tmp_path):
    assert guard(tmp_path, BASE_TEST.replace("[1, 2, 4, 8]", "[1, 2, 4, 8, 16]"))["findings"] == []


def test_assertion_removed(tmp_path):
    r = guard(tmp_path, BASE_TEST.replace("        assert grad_of(2) is not None\n", ""))
    [f] = r["findings"]
    assert f["kind"] == "assertion-removed" and "grad_of(2) is not None" in f["message"]


def test_assertion_call_removed(tmp_path):
    r = guard(tmp_path, BASE_TEST.replace("    torch.testing.assert_close(x.mean(), torch.tensor(1.0), atol=1e-6, rtol=0)\n", ""))
    assert kinds(r) == [("assertion-removed", "tests/test_x.py::test_sum")]


def test_tolerance_loosened(tmp_path):
    r = guard(tmp_path, BASE_TEST.replace("atol=1e-6", "atol=1e-2"))
    msgs = [f for f in r["findings"] if f["kind"] == "tolerance-loosened"]
    assert len(msgs) == 1 and "from 1e-6 to 1e-2" in msgs[0]["message"] and msgs[0]["line"] == 9


def test_tolerance_tightened_is_fine(tmp_path):
    r = guard(tmp_path, BASE_TEST.replace("atol=1e-6", "atol=1e-8"))
    assert [f for f in r["findings"] if f["kind"] == "tolerance-loosened"] == []


def test_tolerance_added_where_the_base_used_the_default(tmp_path):
    head = BASE_TEST.replace("assert x.sum() == n", "assert x.sum() == pytest.approx(n, rel=0.5)")
    r = guard(tmp_path, head)
    assert ("tolerance-loosened", "tests/test_x.py::test_sum") in kinds(r)


def test_expected_exception_widened(tmp_path):
    r = guard(tmp_path, BASE_TEST.replace('pytest.raises(ValueError, match="bad size")', 'pytest.raises(Exception, match="bad size")'))
    assert kinds(r) == [("exception-widened", "tests/test_x.py::test_raises")]
    r2 = guard(tmp_path / "b", BASE_TEST.replace('pytest.raises(ValueError, match="bad size")', "pytest.raises(ValueError)"))
    assert kinds(r2) == [("exception-widened", "tests/test_x.py::test_raises")]
    r3 = guard(tmp_path / "c", BASE_TEST.replace('pytest.raises(ValueError, match="bad size")', 'pytest.raises((ValueError, TypeError), match="bad size")'))
    assert kinds(r3) == [("exception-widened", "tests/test_x.py::test_raises")]


def test_allowed_changes_are_reported_not_dropped(tmp_path):
    r = guard(tmp_path, BASE_TEST.replace("[1, 2, 4, 8]", "[1, 2]"), allow=["tests/test_x.py::test_sum"])
    assert r["findings"] == [] and r["allowed"][0]["kind"] == "narrowed"


def test_unparsable_head_file_is_a_finding(tmp_path):
    r = guard(tmp_path, "def test_sum(:\n")
    assert ("unparsable", "tests/test_x.py") in kinds(r)


def test_cli_prints_json_and_refuses_a_missing_tree(tmp_path):
    base = tree(tmp_path, "base", {"tests/test_x.py": BASE_TEST})
    head = tree(tmp_path, "head", {"tests/test_x.py": BASE_TEST.replace("[1, 2, 4, 8]", "[1]")})
    env = {**os.environ, "PYTHONPATH": os.path.join(os.path.dirname(__file__), "..")}
    out = subprocess.run([sys.executable, "-m", "probegate_guard", "--base", base, "--head", head, "--tests", "tests/**"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["findings"][0]["kind"] == "narrowed"
    bad = subprocess.run([sys.executable, "-m", "probegate_guard", "--base", str(tmp_path / "nope"), "--head", head, "--tests", "x"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "is not a folder" in bad.stderr


def test_two_tolerances_in_one_test_are_compared_each_with_its_own(tmp_path):
    base = BASE_TEST.replace(
        "    torch.testing.assert_close(x.mean(), torch.tensor(1.0), atol=1e-6, rtol=0)\n",
        "    assert torch.allclose(x.mean(), torch.tensor(1.0), atol=1e-6)\n    assert torch.allclose(x.sum(), torch.tensor(float(n)), atol=1e-5)\n",
    )
    head = base.replace("atol=1e-6", "atol=1e-1")
    r = run(tree(tmp_path, "b", {"tests/test_x.py": base}), tree(tmp_path, "h", {"tests/test_x.py": head}), ["tests/**"], [])
    # One finding: the first call's loosening; not an assertion removed, not the second call.
    assert [(f["kind"], f["line"]) for f in r["findings"]] == [("tolerance-loosened", 9)]
    assert "from 1e-6 to 1e-1" in r["findings"][0]["message"]
