"""The guard reads the values of names (issue #36, item 5): a tolerance or expected value moved into
a constant of the same value is no weakening; a looser one is reported with both values; a name it
cannot read is said so. And each weakened check is one finding, quoting what the head now does."""
import os

import pytest
from test_guard import BASE_TEST, tree

from probegate_guard.__main__ import run
from probegate_guard.tests_model import parse_tests

BASE = '''
import torch

def test_equiv():
    assert torch.allclose(out, ref, rtol=1e-5)
'''

CLASS_BASE = '''
import torch

class TestEquiv:
    def test_equiv(self):
        assert torch.allclose(out, ref, rtol=1e-5)
'''


def g(tmp_path, base, head, base_files=None, head_files=None):
    b = tree(tmp_path, "base", {"tests/test_v.py": base, **(base_files or {})})
    h = tree(tmp_path, "head", {"tests/test_v.py": head, **(head_files or {})})
    return run(b, h, ["tests/**"], [])["findings"]


def with_rtol(value_line, arg="EQUIV_RTOL", imports=""):
    return f"import torch\n{imports}{value_line}\ndef test_equiv():\n    assert torch.allclose(out, ref, rtol={arg})\n"


@pytest.mark.parametrize("value", ["1e-5", "0.00001", "1e-6"])
def test_same_or_tighter_module_constant_is_no_finding(tmp_path, value):
    assert g(tmp_path, BASE, with_rtol(f"EQUIV_RTOL = {value}")) == []


@pytest.mark.parametrize("attr", ["self.RTOL", "TestEquiv.RTOL"])
def test_class_attribute_of_the_same_value_is_no_finding(tmp_path, attr):
    head = CLASS_BASE.replace("class TestEquiv:\n", "class TestEquiv:\n    RTOL = 1e-5\n\n").replace("rtol=1e-5", f"rtol={attr}")
    assert g(tmp_path, CLASS_BASE, head) == []


def test_class_attribute_of_a_base_class_is_read(tmp_path):
    head = CLASS_BASE.replace("class TestEquiv:", "class Tolerances:\n    RTOL = 1e-5\n\nclass TestEquiv(Tolerances):").replace("rtol=1e-5", "rtol=self.RTOL")
    assert g(tmp_path, CLASS_BASE, head) == []


@pytest.mark.parametrize("imports,files", [
    ("from tests.constants import EQUIV_RTOL\n", {"tests/constants.py": "EQUIV_RTOL = 1e-5\n"}),
    ("from .common import ATOL as EQUIV_RTOL\n", {"tests/common.py": "ATOL = 1e-5\n"}),
    ("from . import common\n", {"tests/common.py": "EQUIV_RTOL = 1e-5\n"}),
    ("from tests.constants import EQUIV_RTOL\n", {"tests/constants.py": "from .base import RTOL as EQUIV_RTOL\n", "tests/base.py": "RTOL = 1e-5\n"}),
])
def test_constant_imported_from_the_tree_is_read(tmp_path, imports, files):
    arg = "common.EQUIV_RTOL" if "import common" in imports else "EQUIV_RTOL"
    assert g(tmp_path, BASE, with_rtol("", arg, imports), head_files=files) == []


def test_looser_constant_is_reported_with_both_values(tmp_path):
    [f] = g(tmp_path, BASE, with_rtol("EQUIV_RTOL = 1e-3"))
    assert (f["kind"], f["file"], f["line"]) == ("tolerance-loosened", "tests/test_v.py", 4)
    assert "rtol from 1e-5 to 1e-3 (EQUIV_RTOL)" in f["message"]
    assert f["message"].endswith("now `torch.allclose(out, ref, rtol=EQUIV_RTOL)`")


def test_constant_loosened_in_a_shared_file_is_reported(tmp_path):
    head = with_rtol("", imports="from tests.constants import EQUIV_RTOL\n")
    files = lambda v: {"tests/constants.py": f"EQUIV_RTOL = {v}\n"}  # noqa: E731
    [f] = g(tmp_path, head, head, base_files=files("1e-5"), head_files=files("1e-2"))
    assert f["kind"] == "tolerance-loosened" and "from 1e-5 (EQUIV_RTOL) to 1e-2 (EQUIV_RTOL)" in f["message"]


@pytest.mark.parametrize("binding,why", [
    ("EQUIV_RTOL = 1e-5\nEQUIV_RTOL = 1e-2", "`EQUIV_RTOL` is bound 2 times in tests/test_v.py"),
    ("EQUIV_RTOL, OTHER = 1e-5, 1", "`EQUIV_RTOL` is bound by an unpacking in tests/test_v.py"),
    ("for EQUIV_RTOL in (1e-5, 1e-1):\n    pass", "`EQUIV_RTOL` is bound by a loop in tests/test_v.py"),
    ("EQUIV_RTOL = 1e-5\ndef loosen():\n    global EQUIV_RTOL\n    EQUIV_RTOL = 1", "`EQUIV_RTOL` is bound 2 times in tests/test_v.py"),
    ("from helpers import *\nEQUIV_RTOL = 1e-5", "a `from … import *` in tests/test_v.py may bind `EQUIV_RTOL`"),
    ("from tests.constants import EQUIV_RTOL", "`EQUIV_RTOL` is imported from tests.constants, which is not a file of the tree"),
])
def test_name_without_one_literal_binding_is_not_read_and_said_so(tmp_path, binding, why):
    [f] = g(tmp_path, BASE, with_rtol(binding))
    assert f["kind"] == "tolerance-loosened"
    assert f"from 1e-5 to EQUIV_RTOL (its value could not be read: {why}" in f["message"]


def test_parameter_or_attribute_store_is_not_read(tmp_path):
    head = BASE.replace("def test_equiv():", "def test_equiv(EQUIV_RTOL=1e-5):").replace("rtol=1e-5", "rtol=EQUIV_RTOL")
    [f] = g(tmp_path / "a", BASE, head)
    assert "`EQUIV_RTOL` is bound by a parameter in test_equiv" in f["message"]
    head = CLASS_BASE.replace("class TestEquiv:\n", "class TestEquiv:\n    RTOL = 1e-5\n\n    def setUp(self):\n        self.RTOL = 1\n\n")
    [f] = g(tmp_path / "b", CLASS_BASE, head.replace("rtol=1e-5", "rtol=self.RTOL"))
    assert "`RTOL` is also assigned as an attribute in tests/test_v.py" in f["message"]


def test_constant_linked_out_of_the_tree_is_not_read(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("EQUIV_RTOL = 1e-5\n")
    head = with_rtol("", imports="from tests.constants import EQUIV_RTOL\n")
    b = tree(tmp_path, "base", {"tests/test_v.py": BASE})
    h = tree(tmp_path, "head", {"tests/test_v.py": head})
    os.symlink(outside, os.path.join(h, "tests", "constants.py"))
    [f] = run(b, h, ["tests/**"], [])["findings"]
    assert "could not be read" in f["message"]


def test_without_a_tree_an_import_is_not_read():
    t = parse_tests("tests/test_v.py", with_rtol("", imports="from tests.constants import EQUIV_RTOL\n"))["tests/test_v.py::test_equiv"]
    assert t.tolerances[0].value is None and "the guard has no tree to read it in" in t.tolerances[0].why


def test_expected_value_through_a_constant(tmp_path):
    base = "def test_n():\n    assert count() == 3\n"
    assert g(tmp_path / "same", base, "EXPECTED = 3\n\ndef test_n():\n    assert count() == EXPECTED\n") == []
    shared = "from tests.constants import EXPECTED\n\ndef test_n():\n    assert count() == EXPECTED\n"
    [f] = g(tmp_path / "changed", shared, shared, base_files={"tests/constants.py": "EXPECTED = 3\n"}, head_files={"tests/constants.py": "EXPECTED = 4\n"})
    assert (f["kind"], f["line"]) == ("expectation-changed", 4)
    assert "now checks `count() == EXPECTED` (EXPECTED = 4) where the base checked `count() == EXPECTED` (EXPECTED = 3)" in f["message"]


def test_a_mutable_constant_is_not_read(tmp_path):
    [f] = g(tmp_path, "def test_n():\n    assert ids() == [1, 2]\n", "EXPECTED = [1, 2]\n\ndef test_n():\n    EXPECTED.pop()\n    assert ids() == EXPECTED\n")
    assert f["kind"] == "expectation-changed" and "now checks `ids() == EXPECTED` where the base checked `ids() == [1, 2]`" in f["message"]


@pytest.mark.parametrize("wrap", ["assert {}", "self.assertTrue({})"])
def test_one_finding_per_weakened_check(tmp_path, wrap):
    """`assert torch.allclose(a, b)` used to be two checks (the assert, and the allclose call in it),
    so changing it gave two findings, two failed checks under two ids."""
    body = lambda call: f"import torch\n\ndef test_c(self):\n    {wrap.format(call)}\n"  # noqa: E731
    findings = g(tmp_path, body("torch.allclose(a, b)"), body("torch.allclose(a.float(), b)"))
    assert [(f["kind"], f["line"]) for f in findings] == [("assertion-removed", 4)]


def test_changed_arguments_are_quoted_from_the_head(tmp_path):
    base = "import torch\n\ndef test_c():\n    assert torch.allclose(a, b)\n"
    head = "import torch\n\ndef test_c():\n    x = 1\n    if cuda:\n        assert torch.allclose(a, b[0], atol=1e-2)\n"
    findings = g(tmp_path, base, head)
    changed = next(f for f in findings if f["kind"] == "expectation-changed")
    assert changed["line"] == 6 and "no longer" not in changed["message"]
    assert "now checks `torch.allclose(a, b[0], atol=1e-2)` where the base checked `torch.allclose(a, b)` (base line 4), and only when `cuda`" in changed["message"]
    assert len([f for f in findings if f["line"] == 6 and f["kind"] == "expectation-changed"]) == 1


def test_check_of_the_same_subject_in_place_is_quoted(tmp_path):
    r = g(tmp_path, BASE_TEST, BASE_TEST.replace("assert grad_of(2) is not None", "assert grad_of(2, 0) is None"))
    [f] = r
    assert f["line"] == 18 and "now checks `grad_of(2, 0) is None` in place of the base's `grad_of(2) is not None` (base line 18)" in f["message"]


def test_a_check_the_head_makes_fewer_times_is_not_called_gone(tmp_path):
    [f] = g(tmp_path, "def test_c():\n    assert ok(1)\n    assert ok(1)\n", "def test_c():\n    assert ok(1)\n")
    assert f["kind"] == "assertion-removed" and f["line"] == 2
    assert "checks `ok(1)` 1 time where the base checked it 2 times" in f["message"]

