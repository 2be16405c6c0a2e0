"""Checkpoint/resume of ShardedAdam must be bit-exact: save -> load -> N steps == N steps.

Only the stated interface is used: state_dict() is treated as an opaque dict that torch.save writes
(whatever its keys and layout), loaded into a newly built ShardedAdam the way dpopt.load_checkpoint
does (torch.load onto the parameters' device, model first, then optimizer).
"""
# PROBEGATE-CANARY-SHARDED-STATE-91b3f6a8
import io

import torch

from probegate_probe import ProbeFailure, assert_state_equal, check, device_for_rank, emit, locate, param, run_ranks
from _shared import drawn_hyper, drawn_shapes, local_grads, make_params, one_thread_on_cpu, set_grads

# The resumed optimizer is built with other hyperparameters, outside the drawn ranges (task.yml):
# the checkpoint's must win.
OTHER_HYPER = {"lr": 0.5, "betas": (0.5, 0.6), "eps": 1e-3, "weight_decay": 0.25}
PLAIN = (bool, int, float, str, type(None))


def _snapshot(obj, device):
    """A deep, serialised copy: what a checkpoint file would hold, read back as load_checkpoint does."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, map_location=device)


def _not_plain(obj, path="state_dict()"):
    """The first value that is neither a tensor, a plain Python value nor a container of them."""
    if isinstance(obj, torch.Tensor) or isinstance(obj, PLAIN):
        return None
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, PLAIN):
                return f"{path} key {k!r} ({type(k).__name__})"
            found = _not_plain(v, f"{path}[{k!r}]")
            if found:
                return found
        return None
    if isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            found = _not_plain(v, f"{path}[{i}]")
            if found:
                return found
        return None
    return f"{path} ({type(obj).__module__}.{type(obj).__name__})"


def _train(optimizer, params, shapes, rank, first_step, steps):
    for step in range(first_step, first_step + steps):
        set_grads(params, local_grads(shapes, rank, step, params[0].device))
        optimizer.step()


def _ranks(rank, world_size, shapes, hyper, before, after):
    from dpopt import ShardedAdam

    dev = one_thread_on_cpu(device_for_rank(rank))
    params = make_params(shapes, seed=11, device=dev)
    optimizer = ShardedAdam(params, **hyper)
    _train(optimizer, params, shapes, rank, 0, before)
    raw_state = optimizer.state_dict()
    kind = None if isinstance(raw_state, dict) else type(raw_state).__name__
    foreign = _not_plain(raw_state) if kind is None else None
    saved_params = _snapshot([p.detach() for p in params], dev)
    saved_state = _snapshot(raw_state, dev)
    del raw_state
    _train(optimizer, params, shapes, rank, before, after)
    straight = {"params": [p.detach().cpu() for p in params], "state": _snapshot(optimizer.state_dict(), "cpu")}

    params2 = make_params(shapes, seed=12, device=dev)
    optimizer2 = ShardedAdam(params2, **OTHER_HYPER)
    with torch.no_grad():
        for p, saved in zip(params2, saved_params):
            p.copy_(saved)
    optimizer2.load_state_dict(saved_state)
    _train(optimizer2, params2, shapes, rank, before, after)
    resumed = {"params": [p.detach().cpu() for p in params2], "state": _snapshot(optimizer2.state_dict(), "cpu")}
    return {"straight": straight, "resumed": resumed, "not_dict": kind, "foreign": foreign}


def _location(name):
    try:
        import dpopt

        return locate(getattr(dpopt.ShardedAdam, name))
    except Exception:
        return None


def main():
    shapes, hyper = drawn_shapes("state"), drawn_hyper()
    before, after = int(param("steps_before_save", 3)), int(param("steps_after_save", 3))
    results = None
    with check("resume-params-bit-exact", "state",
               requirements=["checkpoint-restores-all", "resume-bit-exact"]) as c:
        c.measured.update(steps_before_save=before, steps_after_save=after)
        results = run_ranks(_ranks, args=(shapes, hyper, before, after), timeout=120)
        c.location = _location("load_state_dict")
        for rank, out in enumerate(results):
            for i, (a, b) in enumerate(zip(out["straight"]["params"], out["resumed"]["params"])):
                if not torch.equal(a, b):
                    diff = (a - b).abs()
                    c.measured.update(rank=rank, parameter=i, max_abs_diff=float(diff.max()),
                                      differing_elements=int((a != b).sum()))
                    c.fail(
                        f"rank {rank}: after state_dict() -> load_state_dict() into a new ShardedAdam (built with "
                        f"other hyperparameters), {after} more steps give parameter {i} values differing in "
                        f"{int((a != b).sum())} elements (up to {float(diff.max()):.3g}) from {after} steps without "
                        f"the interruption: the checkpoint does not restore all the optimizer's state "
                        f"(step count, moments, hyperparameters)"
                    )

    if results is None:
        for name, category in (("resume-optimizer-state-bit-exact", "state"), ("state-dict-plain", "structure")):
            emit(name, category, "skipped", "the save/load run did not complete (see resume-params-bit-exact)")
        return
    with check("state-dict-plain", "structure", location=_location("state_dict"),
               requirements=["checkpoint-rank-shard"]) as c:
        for rank, out in enumerate(results):
            if out["not_dict"]:
                c.fail(f"rank {rank}: state_dict() returned a {out['not_dict']}, the prompt asks for a dict")
            if out["foreign"]:
                c.fail(f"rank {rank}: state_dict() holds {out['foreign']}: a checkpoint must be a dict of tensors "
                       f"and plain Python values")
    with check("resume-optimizer-state-bit-exact", "state", location=_location("state_dict"),
               requirements=["resume-bit-exact"]) as c:
        for rank, out in enumerate(results):
            try:
                assert_state_equal(out["straight"]["state"], out["resumed"]["state"], "state_dict()")
            except ProbeFailure as e:
                raise ProbeFailure(
                    f"rank {rank}: after resuming from a checkpoint and {after} more steps, state_dict() differs "
                    f"from the one of an uninterrupted run: {e}"
                ) from None


if __name__ == "__main__":
    main()
