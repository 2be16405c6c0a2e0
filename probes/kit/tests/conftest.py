import pathlib
import sys

import pytest

KIT = pathlib.Path(__file__).resolve().parents[1]
if str(KIT) not in sys.path:
    # Spawned rank processes inherit sys.path, so they find the kit (and these test modules) too.
    sys.path.insert(0, str(KIT))


@pytest.fixture(autouse=True)
def _clean_probegate_env(monkeypatch, tmp_path):
    # Where results and locations go is the test's business; backend, world size and start
    # method stay as the runner set them (PROBEGATE_BACKEND=nccl on a GPU runner).
    for name in ("PROBEGATE_RESULTS", "PROBEGATE_WORKSPACE", "PROBEGATE_PROBE_DIR"):
        monkeypatch.delenv(name, raising=False)
    # An empty workspace by default: the repository (cwd) holds these tests, which are no submission.
    empty = tmp_path / "empty-ws"
    empty.mkdir()
    monkeypatch.setenv("PROBEGATE_WORKSPACE", str(empty))


@pytest.fixture
def results(tmp_path, monkeypatch):
    """$PROBEGATE_RESULTS set to a fresh file, which the test reads back."""
    path = tmp_path / "results.jsonl"
    monkeypatch.setenv("PROBEGATE_RESULTS", str(path))
    return path


@pytest.fixture
def fake_workspace(tmp_path, monkeypatch):
    """A submission tree with a package `subpkg` on sys.path, set as the workspace."""
    ws = tmp_path / "ws"
    pkg = ws / "subpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(
        "import time\n"
        "\n"
        "\n"
        "def explode(x):\n"
        "    if x > 0:\n"
        "        raise ValueError(f'bad value {x}')\n"  # line 6
        "    return x\n"
        "\n"
        "\n"
        "class Thing:\n"                               # line 10
        "    def method(self, a, b=1):\n"              # line 11
        "        return a + b\n"
        "\n"
        "\n"
        "def hang(seconds):\n"
        "    time.sleep(seconds)\n"                    # line 16
        "    return seconds\n"
        "\n"
        "\n"
        "def step(params, lr, momentum=0.9):\n"        # line 20
        "    return lr\n"
    )
    (pkg / "broken.py").write_text("def ok():\n    return 1\n\ndef bad(:\n    pass\n")  # line 4
    monkeypatch.setenv("PROBEGATE_WORKSPACE", str(ws))
    monkeypatch.syspath_prepend(str(ws))
    for name in ("subpkg", "subpkg.mod", "subpkg.broken"):
        sys.modules.pop(name, None)
    return ws
