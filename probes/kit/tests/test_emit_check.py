import json

import pytest

from probegate_probe import ProbeFailure, check, emit, locate, workspace


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_emit_appends_one_json_object_per_line(results):
    emit("grad.sync", "traffic", "passed", "ok", measured={"bytes": 4096, "ratio": 1.5, "exact": True})
    emit("state-resume", "state", "failed", "differs", location={"path": "pkg/a.py", "line": 3})
    lines = _lines(results)
    assert lines == [
        {"id": "grad.sync", "category": "traffic", "status": "passed", "message": "ok",
         "measured": {"bytes": 4096, "ratio": 1.5, "exact": True}},
        {"id": "state-resume", "category": "state", "status": "failed", "message": "differs",
         "location": {"path": "pkg/a.py", "line": 3}},
    ]
    assert results.read_text().endswith("\n")


@pytest.mark.parametrize("args", [
    ("Bad-Id", "state", "passed"), ("-x", "state", "passed"), ("a b", "state", "passed"),
    ("ok", "speed", "passed"), ("ok", "state", "ok"), ("ok", "state", "failed", "", None, {"x": [1]}),
    ("ok", "state", "failed", "", {"path": "/abs/outside.py", "line": 1}) if False else
    ("ok", "state", "failed", "", {"path": "../up.py", "line": 1}),
    ("ok", "state", "failed", "", {"path": "a.py", "line": 0}),
    ("x" * 129, "state", "passed"),
])
def test_emit_rejects_bad_fields(results, args):
    with pytest.raises(ValueError):
        emit(*args)
    assert not results.exists()


def test_emit_caps_message_and_sanitizes_measured(results):
    emit("long", "functional", "failed", "m" * 5000, measured={"nan": float("nan"), "s": "y" * 500})
    (line,) = _lines(results)
    assert len(line["message"]) == 2000 and line["message"].endswith("…")
    assert line["measured"] == {"nan": "nan", "s": "y" * 256}


def test_emit_prints_to_stdout_without_results_file(capsys):
    emit("manual", "structure", "skipped", "no gpu")
    out = capsys.readouterr().out
    assert json.loads(out) == {"id": "manual", "category": "structure", "status": "skipped", "message": "no gpu"}


def test_emit_location_from_object(results, fake_workspace):
    from subpkg import mod

    emit("loc", "structure", "failed", "x", location=mod.Thing.method)
    emit("loc2", "structure", "failed", "x", location=json.dumps)  # outside the workspace
    first, second = _lines(results)
    assert first["location"] == {"path": "subpkg/mod.py", "line": 11}
    assert "location" not in second


def test_locate(fake_workspace):
    from subpkg import mod

    assert workspace() == fake_workspace.resolve()
    assert locate(mod) == {"path": "subpkg/mod.py", "line": 1}
    assert locate(mod.Thing) == {"path": "subpkg/mod.py", "line": 10}
    assert locate(mod.Thing().method) == {"path": "subpkg/mod.py", "line": 11}
    assert locate(mod.Thing()) == {"path": "subpkg/mod.py", "line": 10}
    assert locate(mod.explode) == {"path": "subpkg/mod.py", "line": 4}
    assert locate(json.dumps) is None
    assert locate(len) is None


def test_check_passed_collects_measured(results):
    with check("fine", "memory") as c:
        c.measured["peak_bytes"] = 10
    assert _lines(results) == [{"id": "fine", "category": "memory", "status": "passed", "message": "",
                                "measured": {"peak_bytes": 10}}]


def test_check_failed_on_probe_failure_and_assert(results):
    with check("pf", "state", location={"path": "default.py", "line": 2}) as c:
        c.fail("state differs", measured={"diff": 1.0})
    with check("pf2", "state", location={"path": "default.py", "line": 2}):
        raise ProbeFailure("elsewhere", location={"path": "other.py", "line": 9})
    with check("as", "functional"):
        assert 1 + 1 == 3, "arithmetic is broken"
    with check("after", "functional"):
        pass
    pf, pf2, asserted, after = _lines(results)
    assert pf["status"] == "failed" and pf["message"] == "state differs"
    assert pf["location"] == {"path": "default.py", "line": 2} and pf["measured"] == {"diff": 1.0}
    assert pf2["location"] == {"path": "other.py", "line": 9}
    assert asserted["status"] == "failed" and asserted["message"] == "arithmetic is broken"
    assert after["status"] == "passed"


def test_check_submission_raised_is_failed_with_location(results, fake_workspace):
    from subpkg import mod

    with check("raises", "functional"):
        mod.explode(3)
    (line,) = _lines(results)
    assert line["status"] == "failed"
    assert line["message"] == "ValueError: bad value 3 (raised in subpkg/mod.py:6)"
    assert line["location"] == {"path": "subpkg/mod.py", "line": 6}


def test_check_submission_syntax_error_and_wrapped_cause_are_failed(results, fake_workspace):
    with check("imports", "structure"):
        import subpkg.broken  # noqa: F401
    with check("wrapped", "functional"):
        from subpkg import mod

        try:
            mod.explode(5)
        except ValueError as exc:
            raise RuntimeError("the step failed") from exc
    syntax, wrapped = _lines(results)
    assert syntax["status"] == "failed" and syntax["location"] == {"path": "subpkg/broken.py", "line": 4}
    assert syntax["message"].startswith("SyntaxError: ") and "(raised in subpkg/broken.py:4)" in syntax["message"]
    assert wrapped["status"] == "failed" and wrapped["location"] == {"path": "subpkg/mod.py", "line": 6}
    assert wrapped["message"] == "RuntimeError: the step failed (raised in subpkg/mod.py:6)"


def test_check_probe_bug_is_error_without_source(results, fake_workspace):
    with check("oops", "functional"):
        {}["missing_key"]
    (line,) = _lines(results)
    assert line["status"] == "error"
    assert line["message"] == "probe error: KeyError: 'missing_key'"
    assert "{}" not in line["message"]  # the probe's source line never leaks


def test_check_skip_and_bad_declaration(results):
    with check("gpu-only", "time") as c:
        c.skip("needs a GPU")
    assert _lines(results)[0]["status"] == "skipped"
    with pytest.raises(ValueError):
        check("Bad", "time")
    with pytest.raises(ValueError):
        check("ok", "latency")


def test_check_lets_keyboard_interrupt_through(results):
    with pytest.raises(KeyboardInterrupt):
        with check("ki", "time"):
            raise KeyboardInterrupt
