"""ShardedAdam's public interface, and its updates against plain Adam on the averaged gradients."""
import torch

from probegate_probe import check, device_for_rank, emit, locate, require_signature, run_ranks
from _shared import HYPER, SHAPES, local_grads, make_params, reference_adam, set_grads, one_thread_on_cpu

STEPS = 4
ATOL, RTOL = 1e-6, 1e-5


def _ranks(rank, world_size):
    dev = one_thread_on_cpu(device_for_rank(rank))
    params = make_params(SHAPES, seed=3, device=dev)
    expected = reference_adam(params, SHAPES, world_size, STEPS, **HYPER)

    from dpopt import ShardedAdam

    optimizer = ShardedAdam(params, **HYPER)
    for step in range(STEPS):
        set_grads(params, local_grads(SHAPES, rank, step, dev))
        optimizer.step()

    worst = {"abs_diff": 0.0, "param": None, "index": None, "bad_elements": 0}
    for i, (p, want) in enumerate(zip(params, expected)):
        diff = (p.detach() - want).abs().reshape(-1)
        bad = diff > ATOL + RTOL * want.abs().reshape(-1)
        worst["bad_elements"] += int(bad.sum())
        if diff.numel() and float(diff.max()) > worst["abs_diff"]:
            worst.update(abs_diff=float(diff.max()), param=i, index=int(diff.argmax()))

    optimizer.zero_grad()
    cleared = all(p.grad is None or not bool(p.grad.any()) for p in params)
    return {"worst": worst, "params": [p.detach().cpu() for p in params], "zero_grad_cleared": cleared}


def _location(name):
    try:
        import dpopt

        return locate(getattr(dpopt.ShardedAdam, name))
    except Exception:
        return None


def main():
    results = None
    with check("sharded-adam-matches-adam", "functional") as c:
        c.measured.update(steps=STEPS, parameter_elements=sum(torch.Size(s).numel() for s in SHAPES))
        results = run_ranks(_ranks)
        c.location = _location("step")
        bad = [(r, out["worst"]) for r, out in enumerate(results) if out["worst"]["bad_elements"]]
        c.measured["max_abs_diff"] = max(out["worst"]["abs_diff"] for out in results)
        total, n = c.measured["parameter_elements"], len(results)
        uneven = f" The parameters' total size ({total}) is not a multiple of the world size ({n})." if total % n else ""
        if bad:
            rank, w = bad[0]
            c.measured["mismatched_elements"] = w["bad_elements"]
            c.fail(
                f"after {STEPS} steps on rank {rank}, {w['bad_elements']} parameter elements differ from "
                f"Adam applied to the rank-averaged gradients (largest: {w['abs_diff']:.3g} at element "
                f"{w['index']} of parameter {w['param']}, shape {tuple(SHAPES[w['param']])}; tolerance "
                f"{ATOL:g} + {RTOL:g}·|value|)." + uneven
            )

    if results is None:
        for name in ("ranks-agree-after-step", "zero-grad-clears-gradients"):
            emit(name, "functional", "skipped", "ShardedAdam did not complete the steps (see sharded-adam-matches-adam)")
    else:
        with check("ranks-agree-after-step", "functional", location=_location("step")) as c:
            for rank, out in enumerate(results[1:], start=1):
                for i, (a, b) in enumerate(zip(results[0]["params"], out["params"])):
                    if not torch.equal(a, b):
                        c.measured["max_abs_diff"] = float((a - b).abs().max())
                        c.fail(f"after step() rank {rank} holds different values than rank 0 for parameter {i} "
                               f"(shape {tuple(a.shape)}): the updated parameters must reach every rank")
        with check("zero-grad-clears-gradients", "functional", location=_location("zero_grad")) as c:
            stale = [r for r, out in enumerate(results) if not out["zero_grad_cleared"]]
            if stale:
                c.fail(f"zero_grad() left non-zero gradients on rank(s) {stale}")

    with check("sharded-adam-interface", "structure") as c:
        from dpopt import ShardedAdam

        c.location = locate(ShardedAdam)
        require_signature(ShardedAdam, "__init__", ["params", "lr", "betas", "eps", "weight_decay", "group"])
        require_signature(ShardedAdam, "step", [])
        require_signature(ShardedAdam, "zero_grad", ["set_to_none"])
        require_signature(ShardedAdam, "state_dict", [])
        require_signature(ShardedAdam, "load_state_dict", ["state_dict"])

    with check("trainer-interface", "structure") as c:
        from dpopt import DataParallelTrainer

        c.location = locate(DataParallelTrainer)
        require_signature(DataParallelTrainer, "train_step", ["inputs", "targets"])


if __name__ == "__main__":
    main()
