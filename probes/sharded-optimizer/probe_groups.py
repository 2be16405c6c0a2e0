"""ShardedAdam above two ranks and on a process group other than the default one.

The job has as many ranks as the task's `gpus` (2), which hides mistakes that only show at three or
more ranks (padding, shard offsets, an assumed world size). The prompt requires gloo on CPU, so these
checks run their own gloo CPU ranks, `extra_world_size` of them (drawn per evaluation), whatever the
job's backend. The `group` argument is exercised with rank 0 alone in one group and the other ranks
together in a second one.
"""
# PROBEGATE-CANARY-SHARDED-GROUPS-e4a90c37
import torch
import torch.distributed as dist

from probegate_probe import check, locate, param, run_ranks
from _shared import drawn_hyper, drawn_shapes, local_grads, make_params, mismatch, numel, reference_adam, set_grads

ATOL, RTOL = 1e-6, 1e-5


def _train(params, shapes, rank, steps, optimizer):
    for step in range(steps):
        set_grads(params, local_grads(shapes, rank, step, params[0].device))
        optimizer.step()


def _world_ranks(rank, n, shapes, hyper, steps):
    torch.set_num_threads(1)
    dev = torch.device("cpu")
    params = make_params(shapes, seed=5, device=dev)
    expected = reference_adam(params, shapes, list(range(n)), steps, **hyper)

    from dpopt import ShardedAdam

    _train(params, shapes, rank, steps, ShardedAdam(params, **hyper))
    return {"worst": mismatch(params, expected, ATOL, RTOL), "params": [p.detach() for p in params]}


def _members(rank, n):
    return [0] if rank == 0 else list(range(1, n))


def _group_ranks(rank, n, shapes, hyper, steps):
    torch.set_num_threads(1)
    dev = torch.device("cpu")
    # Every rank takes part in creating every group, as torch.distributed requires.
    groups = [dist.new_group([0]), dist.new_group(list(range(1, n)))]
    group = groups[0] if rank == 0 else groups[1]
    params = make_params(shapes, seed=6, device=dev)
    expected = reference_adam(params, shapes, _members(rank, n), steps, **hyper)

    from dpopt import ShardedAdam

    _train(params, shapes, rank, steps, ShardedAdam(params, group=group, **hyper))
    return {"worst": mismatch(params, expected, ATOL, RTOL)}


def _location():
    try:
        import dpopt

        return locate(dpopt.ShardedAdam.step)
    except Exception:
        return None


def _fail_on_mismatch(c, results, what, shapes, steps):
    bad = [(r, out["worst"]) for r, out in enumerate(results) if out["worst"]["bad_elements"]]
    c.measured["max_abs_diff"] = max(out["worst"]["abs_diff"] for out in results)
    if bad:
        rank, w = bad[0]
        c.measured["mismatched_elements"] = w["bad_elements"]
        c.fail(f"{what}: after {steps} steps, rank {rank} has {w['bad_elements']} of {numel(shapes)} parameter "
               f"elements that differ from Adam on the averaged gradients (largest {w['abs_diff']:.3g} in "
               f"parameter {w['param']}, shape {tuple(shapes[w['param']])})")


def main():
    n = int(param("extra_world_size", 3))
    shapes, hyper, steps = drawn_shapes("groups"), drawn_hyper(), int(param("steps", 3))

    with check("sharded-adam-more-ranks", "functional",
               requirements=["step-matches-adam", "step-ranks-agree", "init-uneven-total", "backends"]) as c:
        c.measured.update(world_size=n, backend="gloo", parameter_elements=numel(shapes), steps=steps)
        results = run_ranks(_world_ranks, world_size=n, backend="gloo", args=(shapes, hyper, steps), timeout=90)
        c.location = _location()
        _fail_on_mismatch(c, results, f"{n} gloo ranks, the default group ({numel(shapes)} elements, "
                          f"{numel(shapes) % n} more than a multiple of {n})", shapes, steps)
        for rank, out in enumerate(results[1:], start=1):
            if any(not torch.equal(a, b) for a, b in zip(results[0]["params"], out["params"])):
                c.fail(f"{n} gloo ranks: rank {rank} ends step() with other parameters than rank 0")

    with check("sharded-adam-process-group", "functional", requirements=["group-argument"]) as c:
        c.measured.update(world_size=n, group_sizes=f"1+{n - 1}", backend="gloo")
        results = run_ranks(_group_ranks, world_size=n, backend="gloo", args=(shapes, hyper, steps), timeout=90)
        c.location = _location()
        _fail_on_mismatch(c, results, f"{n} gloo ranks split into the groups [0] and {list(range(1, n))}, each "
                          f"rank's ShardedAdam built with group= its group (which must shard and average over that "
                          f"group only)", shapes, steps)


if __name__ == "__main__":
    main()
