"""Checkpoint/resume of ShardedAdam must be bit-exact: save -> load -> N steps == N steps."""
import io

import torch

from probegate_probe import ProbeFailure, assert_state_equal, check, device_for_rank, emit, locate, run_ranks
from _shared import HYPER, SHAPES, local_grads, make_params, set_grads, one_thread_on_cpu

BEFORE, AFTER = 3, 3
# The resumed optimizer is built with other hyperparameters: the checkpoint's must win.
OTHER_HYPER = {"lr": 0.5, "betas": (0.5, 0.6), "eps": 1e-3, "weight_decay": 0.25}


def _snapshot(obj):
    """A deep, serialised copy: what a checkpoint file would hold."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, map_location="cpu")


def _train(optimizer, params, rank, first_step, steps):
    for step in range(first_step, first_step + steps):
        set_grads(params, local_grads(SHAPES, rank, step, params[0].device))
        optimizer.step()


def _ranks(rank, world_size):
    from dpopt import ShardedAdam

    dev = one_thread_on_cpu(device_for_rank(rank))
    params = make_params(SHAPES, seed=11, device=dev)
    optimizer = ShardedAdam(params, **HYPER)
    _train(optimizer, params, rank, 0, BEFORE)
    saved_params = _snapshot([p.detach() for p in params])
    saved_state = _snapshot(optimizer.state_dict())
    _train(optimizer, params, rank, BEFORE, AFTER)
    straight = {"params": [p.detach().cpu() for p in params], "state": _snapshot(optimizer.state_dict())}

    params2 = make_params(SHAPES, seed=12, device=dev)
    optimizer2 = ShardedAdam(params2, **OTHER_HYPER)
    with torch.no_grad():
        for p, saved in zip(params2, saved_params):
            p.copy_(saved)
    optimizer2.load_state_dict(_snapshot(saved_state))
    _train(optimizer2, params2, rank, BEFORE, AFTER)
    resumed = {"params": [p.detach().cpu() for p in params2], "state": _snapshot(optimizer2.state_dict())}
    return {"straight": straight, "resumed": resumed}


def _location(name):
    try:
        import dpopt

        return locate(getattr(dpopt.ShardedAdam, name))
    except Exception:
        return None


def main():
    results = None
    with check("resume-params-bit-exact", "state") as c:
        results = run_ranks(_ranks)
        c.location = _location("load_state_dict")
        for rank, out in enumerate(results):
            for i, (a, b) in enumerate(zip(out["straight"]["params"], out["resumed"]["params"])):
                if not torch.equal(a, b):
                    diff = (a - b).abs()
                    c.measured.update(rank=rank, parameter=i, max_abs_diff=float(diff.max()),
                                      differing_elements=int((a != b).sum()))
                    c.fail(
                        f"rank {rank}: after state_dict() -> load_state_dict() into a new ShardedAdam (built with "
                        f"other hyperparameters), {AFTER} more steps give parameter {i} values differing in "
                        f"{int((a != b).sum())} elements (up to {float(diff.max()):.3g}) from {AFTER} steps without "
                        f"the interruption: the checkpoint does not restore all the optimizer's state "
                        f"(step count, moments, hyperparameters)"
                    )

    if results is None:
        emit("resume-optimizer-state-bit-exact", "state", "skipped",
             "the save/load run did not complete (see resume-params-bit-exact)")
        return
    with check("resume-optimizer-state-bit-exact", "state", location=_location("state_dict")) as c:
        for rank, out in enumerate(results):
            try:
                assert_state_equal(out["straight"]["state"], out["resumed"]["state"], "state_dict()")
            except ProbeFailure as e:
                raise ProbeFailure(
                    f"rank {rank}: after resuming from a checkpoint and {AFTER} more steps, state_dict() differs "
                    f"from the one of an uninterrupted run: {e}"
                ) from None


if __name__ == "__main__":
    main()
