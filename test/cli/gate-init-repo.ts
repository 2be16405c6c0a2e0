/**
 * A small distributed repository for `gate init`: a package whose function all-reduces across ranks,
 * a pytest test that spawns 2 gloo ranks calling it, a helper-only test, its declared requirements;
 * and PR branches made on it (an honest change, an extra all_reduce, a leaked buffer).
 */
import { tmp } from "../helpers.js";
import { gitIn, write } from "../engine/repo-gate/gate-repo.js";

export const COMM = `"""Collectives of dcomm."""
import torch
import torch.distributed as dist


def all_reduce_sum(tensor: torch.Tensor, group=None) -> torch.Tensor:
    """Sums tensor over the ranks of group, in place."""
    dist.all_reduce(tensor, group=group)
    return tensor


class Averager:
    def __init__(self, world: int):
        self.world = world

    def average(self, tensor):
        return all_reduce_sum(tensor) / self.world


def _private():
    pass


def local_sum(tensor: torch.Tensor) -> torch.Tensor:
    """The sum of this rank's tensor (no collective)."""
    return tensor.sum()
`;

export const TEST_COMM = `import torch
import torch.multiprocessing as mp


def _rank(rank, world, init):
    import torch.distributed as dist
    from dcomm.comm import all_reduce_sum

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    for _ in range(4):
        out = all_reduce_sum(torch.ones(1 << 20))
        assert out[0].item() == world
    dist.destroy_process_group()


def test_all_reduce_two_ranks(tmp_path):
    mp.spawn(_rank, args=(2, f"file://{tmp_path}/rendezvous"), nprocs=2, join=True)


def test_local_sum():
    from dcomm.comm import local_sum

    assert local_sum(torch.arange(4.0)).item() > 0
`;

/** A test whose ranks are processes it starts itself (a torchrun-style launcher: the file runs itself as each rank). */
export const TEST_LAUNCH = `import os
import socket
import subprocess
import sys

import torch

from dcomm.comm import all_reduce_sum

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _worker():
    import torch.distributed as dist

    dist.init_process_group("gloo")
    for _ in range(2):
        assert all_reduce_sum(torch.ones(1 << 18))[0].item() == dist.get_world_size()
    dist.destroy_process_group()


def test_all_reduce_in_launched_ranks():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2",
               PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    ranks = [subprocess.Popen([sys.executable, __file__], env=dict(env, RANK=str(r))) for r in range(2)]
    assert [p.wait(timeout=300) for p in ranks] == [0, 0]


if __name__ == "__main__":
    _worker()
`;

export const FILES: Record<string, string> = {
  "dcomm/__init__.py": "",
  "dcomm/comm.py": COMM,
  "dcomm/fmt.py": "def fmt(x):\n    return str(x)\n",
  "tests/helpers.py": "from dcomm.comm import Averager  # noqa: F401\n",
  "tests/test_comm.py": TEST_COMM,
  "tests/test_launch.py": TEST_LAUNCH,
  "tests/test_avg.py": "from helpers import Averager\n\n\ndef test_world():\n    assert Averager(2).world == 2\n",
  "tests/test_fmt.py": "from dcomm.fmt import fmt\n\n\ndef test_fmt():\n    assert fmt(1) == '1'\n",
  "requirements.txt": "torch>=1.13\nnumpy\n",
  "requirements-docs.txt": "sphinx\n",
  "pyproject.toml": '[project]\nname = "dcomm"\nversion = "0.1"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
};

/** The repository on main (FILES with `files` over them; a null leaves a file out); returns its folder and the base commit. */
export function gateInitRepo(files: Record<string, string | null> = {}): { dir: string; base: string } {
  const dir = tmp("pg-gate-init-repo-");
  gitIn(dir, "init", "-q");
  const all: Record<string, string | null> = { ...FILES, ...files };
  write(dir, Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => e[1] !== null)));
  gitIn(dir, "add", "-A");
  gitIn(dir, "commit", "-qm", "base");
  return { dir, base: gitIn(dir, "rev-parse", "HEAD") };
}

/** A PR branch off `base` changing `files`; returns its head commit. */
export function prBranch(dir: string, base: string, name: string, files: Record<string, string | null>): string {
  gitIn(dir, "checkout", "-q", "-b", name, base);
  write(dir, files);
  gitIn(dir, "add", "-A");
  gitIn(dir, "commit", "-qm", name);
  const head = gitIn(dir, "rev-parse", "HEAD");
  gitIn(dir, "checkout", "-q", "main");
  return head;
}

export const HONEST = COMM.replace('    """Sums tensor over the ranks of group, in place."""\n', '    """Sums tensor over the ranks of group, in place (documented)."""\n');
// The same sum, by a second all_reduce of the mean in place: twice the traffic, no more memory.
export const EXTRA_ALL_REDUCE = COMM.replace("    dist.all_reduce(tensor, group=group)\n", "    dist.all_reduce(tensor, group=group)\n    dist.all_reduce(tensor.div_(dist.get_world_size(group)), group=group)\n");
export const LEAK = COMM.replace("def all_reduce_sum(", "_SEEN = []\n\n\ndef all_reduce_sum(").replace("    return tensor\n\n\nclass", "    _SEEN.append(tensor.clone())\n    return tensor\n\n\nclass");
