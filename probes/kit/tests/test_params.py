import json

import pytest

from probegate_probe import check, emit, param, params, rng, seed


def test_param_reads_the_drawn_values(monkeypatch):
    monkeypatch.setenv("PROBEGATE_PARAMS", json.dumps({"hidden": 37, "dtype": "float64"}))
    monkeypatch.setenv("PROBEGATE_SEED", "1234")
    assert param("hidden", 8) == 37
    assert param("dtype") == "float64"
    assert params() == {"hidden": 37, "dtype": "float64"}
    assert seed() == 1234


def test_param_falls_back_to_the_default_only_when_nothing_was_drawn(monkeypatch):
    monkeypatch.delenv("PROBEGATE_PARAMS", raising=False)
    monkeypatch.delenv("PROBEGATE_SEED", raising=False)
    assert param("hidden", 8) == 8
    assert seed(7) == 7
    monkeypatch.setenv("PROBEGATE_PARAMS", json.dumps({"hidden": 37}))
    with pytest.raises(KeyError, match="not declared in task.yml"):
        param("hiden")


def test_rng_is_reproducible_per_seed_and_salt(monkeypatch):
    monkeypatch.setenv("PROBEGATE_SEED", "99")
    a = [rng("x").random() for _ in range(2)]
    assert a[0] == a[1]
    assert rng("x").random() != rng("y").random()
    monkeypatch.setenv("PROBEGATE_SEED", "100")
    assert rng("x").random() != a[0]


def test_emit_and_check_carry_requirement_ids(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    monkeypatch.setenv("PROBEGATE_RESULTS", str(path))
    emit("a", "state", "passed", requirements=["resume-exact", "resume-exact", "step-count"])
    with check("b", "functional", requirements="shard-cover"):
        pass
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[0]["requirements"] == ["resume-exact", "step-count"]
    assert lines[1]["requirements"] == ["shard-cover"]
    with pytest.raises(ValueError, match="requirement ids"):
        emit("c", "state", "passed", requirements=["Bad Id"])
