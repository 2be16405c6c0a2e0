"""Changes the weakened-test guard must not report (they keep every base check), beside the ones it must.

Each keeping case is a shape met in a real merged PR the gates replayed (bench/results/*-gate-replay.md):
vLLM 0.14.0's call that gained an argument, 0.11.0's narrowed Optional, Megatron-LM #6080's
parametrization over more names with a skip for a new case only."""
from test_guard import BASE_TEST, guard, kinds

PARAM_BASE = '''
import pytest

@pytest.mark.parametrize(("tp", "etp"), [(2, 1), (1, 2)])
def test_sync(tp, etp):
    assert sync(tp, etp) == 4
'''


def p_guard(tmp_path, head):
    return guard(tmp_path, BASE_TEST, extra_base={"tests/test_p.py": PARAM_BASE}, extra_head={"tests/test_p.py": head})


def test_call_that_gained_an_argument_keeps_its_check(tmp_path):
    r = guard(tmp_path, BASE_TEST.replace("assert grad_of(2) is not None", "assert grad_of(2, 0) is not None"))
    assert r["findings"] == []


def test_check_narrowed_with_and_is_kept(tmp_path):
    r = guard(tmp_path, BASE_TEST.replace("assert grad_of(2) is not None", "assert grad_of is not None and grad_of(2) is not None"))
    assert r["findings"] == []


def test_attribute_appended_to_the_subject_is_kept(tmp_path):
    r = guard(tmp_path, BASE_TEST.replace("assert x.sum() == n", "assert x.sum().data == n"))
    assert r["findings"] == []


def test_changed_expected_value_is_still_reported(tmp_path):
    r = guard(tmp_path, BASE_TEST.replace("assert grad_of(2) is not None", "assert grad_of(2, 0) is None"))
    assert kinds(r) == [("assertion-removed", "tests/test_x.py::TestBuffer::test_keeps_grad")]


def test_argument_replaced_rather_than_appended_is_still_reported(tmp_path):
    r = guard(tmp_path, BASE_TEST.replace("assert grad_of(2) is not None", "assert grad_of(3) is not None"))
    assert kinds(r) == [("assertion-removed", "tests/test_x.py::TestBuffer::test_keeps_grad")]


def test_parametrization_over_more_names_keeping_every_case_is_fine(tmp_path):
    head = PARAM_BASE.replace('("tp", "etp"), [(2, 1), (1, 2)]', '("tp", "etp", "remat"), [(2, 1, 1), (1, 2, 1), (1, 1, 2)]').replace(
        "def test_sync(tp, etp):", "def test_sync(tp, etp, remat):")
    assert p_guard(tmp_path, head)["findings"] == []


def test_parametrization_over_more_names_losing_a_case_is_narrowed(tmp_path):
    head = PARAM_BASE.replace('("tp", "etp"), [(2, 1), (1, 2)]', '("tp", "etp", "remat"), [(2, 1, 1), (1, 1, 2)]')
    assert kinds(p_guard(tmp_path, head)) == [("narrowed", "tests/test_p.py::test_sync")]


EXTENDED = PARAM_BASE.replace('("tp", "etp"), [(2, 1), (1, 2)]', '("tp", "etp", "remat"), [(2, 1, 1), (1, 2, 1), (1, 1, 2)]').replace(
    "def test_sync(tp, etp):", "def test_sync(tp, etp, remat):")


def test_skip_only_for_a_case_the_head_added_is_fine(tmp_path):
    head = EXTENDED.replace("    assert sync", "    if remat > 1:\n        if not HAVE_REMAT:\n            pytest.skip('needs remat')\n    assert sync")
    assert p_guard(tmp_path, head)["findings"] == []


def test_skip_under_a_condition_a_base_case_meets_is_reported(tmp_path):
    head = EXTENDED.replace("    assert sync", "    if tp > 1:\n        pytest.skip('slow')\n    assert sync")
    assert kinds(p_guard(tmp_path, head)) == [("skipped", "tests/test_p.py::test_sync")]


def test_skip_under_a_condition_that_is_not_only_parameters_is_reported(tmp_path):
    head = EXTENDED.replace("    assert sync", "    if not HAVE_REMAT:\n        pytest.skip('needs remat')\n    assert sync")
    assert kinds(p_guard(tmp_path, head)) == [("skipped", "tests/test_p.py::test_sync")]


def test_changed_expectation_names_both_values_at_the_head_line(tmp_path):
    """vLLM 0.8.5 rewrote `blocks == [1, 2, 3, 4, 5]` to `[1, 2, 3, 4]` when it dropped preallocation:
    still a finding (an agent can rewrite an expectation to match its bug), but one that says what the
    test now expects, where."""
    r = guard(tmp_path, BASE_TEST.replace("assert x.sum() == n", "assert x.sum() == n + 1"))
    [f] = r["findings"]
    assert (f["kind"], f["test"], f["line"]) == ("expectation-changed", "tests/test_x.py::test_sum", 8)
    assert "now checks `x.sum() == n + 1` where the base checked `x.sum() == n`" in f["message"]


def test_changed_expectation_of_an_assert_call(tmp_path):
    base = "def test_eq(self):\n    self.assertEqual(pool.free(), 10)\n"
    r = guard(tmp_path, BASE_TEST, extra_base={"tests/test_u.py": base}, extra_head={"tests/test_u.py": base.replace("10)", "9)")})
    assert kinds(r) == [("expectation-changed", "tests/test_u.py::test_eq")]


def test_other_operator_on_the_same_subject_is_a_removed_check(tmp_path):
    r = guard(tmp_path, BASE_TEST.replace("assert x.sum() == n", "assert x.sum() >= n"))
    assert kinds(r) == [("assertion-removed", "tests/test_x.py::test_sum")]


NESTED = '''
def test_hits():
    def check(n):
        assert hit(n) == n * 16
    check(1)
    check(2)
'''


def test_asserts_moved_into_a_module_level_helper_are_kept(tmp_path):
    """vLLM 0.16.0 moved the nested `test_partial_request_hit` of test_prefill_hybrid_model to a
    module-level `_test_partial_request_hit(manager, ...)`: the test still checks everything."""
    head = "def _check(n):\n    assert hit(n) == n * 16\n\ndef test_hits():\n    _check(1)\n    _check(2)\n"
    r = guard(tmp_path, BASE_TEST, extra_base={"tests/test_h.py": NESTED}, extra_head={"tests/test_h.py": head})
    assert r["findings"] == []


def test_a_helper_that_stops_checking_weakens_the_tests_that_call_it(tmp_path):
    base = "class TestPool:\n    def _check(self, n):\n        assert hit(n) == n * 16\n\n    def test_hits(self):\n        self._check(1)\n"
    r = guard(tmp_path, BASE_TEST, extra_base={"tests/test_h.py": base}, extra_head={"tests/test_h.py": base.replace("assert hit(n) == n * 16", "hit(n)")})
    assert kinds(r) == [("assertion-removed", "tests/test_h.py::TestPool::test_hits")]


GENERAL_HEAD = '''
def _check(n, full):
    assert len(hashes(n)) == full

def test_hits():
    full = 3
    _check(1, full)
    _check(2, full=3)
'''


def test_expected_value_generalised_into_a_helper_parameter_is_kept(tmp_path):
    """vLLM 0.16.0: `len(req.block_hashes) == 3` became a helper's `== num_full_blocks`, every call
    passing `num_full_blocks = 3`."""
    base = "def test_hits():\n    def check(n):\n        assert len(hashes(n)) == 3\n    check(1)\n    check(2)\n"
    r = guard(tmp_path, BASE_TEST, extra_base={"tests/test_h.py": base}, extra_head={"tests/test_h.py": GENERAL_HEAD})
    assert r["findings"] == []


def test_a_call_passing_another_value_to_the_generalised_check_is_reported(tmp_path):
    base = "def test_hits():\n    def check(n):\n        assert len(hashes(n)) == 3\n    check(1)\n    check(2)\n"
    head = GENERAL_HEAD.replace("_check(2, full=3)", "_check(2, full=4)")
    r = guard(tmp_path, BASE_TEST, extra_base={"tests/test_h.py": base}, extra_head={"tests/test_h.py": head})
    assert kinds(r) == [("expectation-changed", "tests/test_h.py::test_hits")]


def test_a_name_bound_again_is_not_read_as_the_base_literal(tmp_path):
    """`full = 3` counts only when it is the name's one binding: unpacked again to 4, the call passes 4."""
    base = "def test_hits():\n    def check(n):\n        assert len(hashes(n)) == 3\n    check(1)\n    check(2)\n"
    head = GENERAL_HEAD.replace("    full = 3\n", "    full = 3\n    full, other = 4, 0\n").replace("_check(2, full=3)", "_check(2, full)")
    r = guard(tmp_path, BASE_TEST, extra_base={"tests/test_h.py": base}, extra_head={"tests/test_h.py": head})
    assert kinds(r) == [("expectation-changed", "tests/test_h.py::test_hits")]
