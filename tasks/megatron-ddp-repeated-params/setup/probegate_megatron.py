"""pytest plugin (the task's `setup:`): Megatron-LM's unit-test harness on probegate's ranks.

Megatron runs its unit tests under torchrun, which sets WORLD_SIZE, LOCAL_RANK and MASTER_PORT; its
tests/unit_tests/conftest.py (left out of this task: it downloads data sets and needs Transformer
Engine) does the rest. probegate runs the official tests as one process, so this plugin sets what
torchrun would for a world of one rank, on a port of this run's own, before the tests import
tests/unit_tests/test_utilities.py (which reads them at import), and tears the process group down at
the end so NCCL does not warn or hang at exit.

One rank on a GPU runner (NCCL refuses two ranks on one GPU) and one rank on a CPU runner as well:
the tests' expectations depend on the world size (with two ranks test_grad_sync[1-False-True-True]
catches a bucket reduce-scattered twice, which one rank cannot see), so the official verdict means
the same on both. On a job without a GPU, probegate_cpu_shim maps Megatron's CUDA/NCCL assumptions
onto the CPU and gloo first; on a job with one it does nothing. It changes no Megatron code and no test.
"""
import os
import socket


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pytest_configure(config):
    # On a job without a GPU: Megatron's CUDA/NCCL assumptions onto the CPU and gloo (nothing on a GPU).
    import probegate_cpu_shim

    probegate_cpu_shim.install()
    # One process: the official tests are run as one rank (NCCL refuses two ranks on one GPU).
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
