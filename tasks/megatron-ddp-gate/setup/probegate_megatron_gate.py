"""pytest plugin (the gate's `setup:`): Megatron-LM's unit-test harness on probegate's runner.

Megatron runs its unit tests under torchrun, which sets WORLD_SIZE, LOCAL_RANK and MASTER_PORT;
probegate runs the official tests as one process, so this plugin sets what torchrun would for a
world of one rank, on a port of this run's own, before the tests import
tests/unit_tests/test_utilities.py (which reads them at import), and tears the process group down
at the end so NCCL does not warn or hang at exit.

On a job without a GPU, probegate_cpu_shim maps Megatron's CUDA/NCCL assumptions onto the CPU and
gloo first; on a job with one it does nothing. Megatron-LM requires Python >= 3.12 since
2026-03-30 (#3826), but the runner's base interpreter is 3.11: probegate_py311 gives 3.11 the one
3.12 name the tree's import closure uses (typing.override, an identity decorator). It changes no
Megatron code and no test, and it is the same for the base and the head. probegate_modelopt_stub
lets the harness import megatron.training in the trees where it reaches NVIDIA ModelOpt (not in the
environment; the subsystem never uses it) at module level.
"""
import os
import socket

# At import, before pytest loads the repository's conftest.py (which imports megatron.training).
import probegate_py311

probegate_py311.install()
# ModelOpt for megatron.post_training.utils alone, where a tree imports it at module level from the
# harness's import closure (upstream's #6247 window; see probegate_modelopt_stub).
import probegate_modelopt_stub

probegate_modelopt_stub.install()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pytest_configure(config):
    # On a job without a GPU: Megatron's CUDA/NCCL assumptions onto the CPU and gloo (nothing on a GPU).
    import probegate_cpu_shim

    probegate_cpu_shim.install()
    # One process: the official tests run as one rank (NCCL refuses two ranks on one GPU).
    os.environ["WORLD_SIZE"] = "1"
    os.environ["LOCAL_RANK"] = "0"
    os.environ["RANK"] = "0"
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(_free_port())


def pytest_runtest_teardown(item, nextitem):
    """After a test that tore Megatron's groups down, destroy the process groups it left behind.

    Megatron's Utils.destroy_model_parallel() only forgets its groups; torch keeps every one alive,
    and with gloo each holds worker and transport threads. Over the distributed suite (one
    initialize_model_parallel per test) a run piles up ~800 groups and 2,300 threads, which on a busy
    CPU runner turned a 70 s run into 10+ min. The default group stays; a test that leaves Megatron's
    model parallelism initialized (for the next one) keeps its groups."""
    try:
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            return
        from megatron.core import parallel_state

        if parallel_state.model_parallel_is_initialized():
            return
        c10d = dist.distributed_c10d
        world = c10d._get_default_group()
        for pg in list(c10d._world.pg_map.keys()):
            if pg is not world:
                try:
                    dist.destroy_process_group(pg)
                except Exception:  # an already-destroyed or foreign group: leave it
                    pass
    except Exception:  # cleanup must not turn a passing run into a failing one
        pass


def pytest_unconfigure(config):
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # teardown must not turn a passing run into a failing one
        pass
