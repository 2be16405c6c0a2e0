"""ShardedAdam's public interface, and its updates against plain Adam on the averaged gradients.

Everything here goes through the interfaces the prompt states (`ShardedAdam(params, lr, betas, eps,
weight_decay, group)`, `step()`, `zero_grad(set_to_none)`, `DataParallelTrainer.train_step`) and
compares parameters, never the optimizer's internals. Shapes, hyperparameters and step counts are
drawn per evaluation (task.yml `params:`).
"""
# PROBEGATE-CANARY-SHARDED-API-7d2e94b1
import torch
from torch import nn

from probegate_probe import check, device_for_rank, emit, locate, param, require_signature, rng, run_ranks
from _shared import (drawn_hyper, drawn_shapes, local_grads, make_params, mismatch, numel, one_thread_on_cpu,
                     reference_adam, set_grads)

ATOL, RTOL = 1e-6, 1e-5
DEFAULT_STEPS = 2
STATED_DEFAULTS = {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0}
TRAINER_SIZES = [6, 13, 5]
TRAINER_BATCH = 3


def _describe(exc):
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"


def _ranks(rank, world_size, shapes, hyper, steps, without_grad):
    dev = one_thread_on_cpu(device_for_rank(rank))
    everyone = list(range(world_size))
    params = make_params(shapes, seed=3, device=dev)
    expected = reference_adam(params, shapes, everyone, steps, **hyper)

    from dpopt import ShardedAdam

    # A generator, as model.parameters() is: the prompt says "an iterable of parameters".
    optimizer = ShardedAdam((p for p in params), **hyper)
    for step in range(steps):
        set_grads(params, local_grads(shapes, rank, step, dev))
        optimizer.step()
    out = {"worst": mismatch(params, expected, ATOL, RTOL), "params": [p.detach().cpu() for p in params]}

    # The prompt's defaults (lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0): built without
    # hyperparameters, ShardedAdam must step exactly as one built with them spelled out. Compared with
    # each other, not with the reference, so that only the defaults are judged here.
    try:
        implicit, explicit = make_params(shapes, seed=4, device=dev), make_params(shapes, seed=4, device=dev)
        optimizers = (ShardedAdam(implicit), ShardedAdam(explicit, **STATED_DEFAULTS))
        for step in range(DEFAULT_STEPS):
            for ps, opt in zip((implicit, explicit), optimizers):
                set_grads(ps, local_grads(shapes, rank, step, dev))
                opt.step()
        out["defaults"] = mismatch(implicit, explicit, 0.0, 0.0)
    except Exception as e:  # reported by its own check
        out["defaults_error"] = _describe(e)

    # zero_grad(set_to_none) as dpopt.Adam.zero_grad: True (the default) drops the gradients,
    # False zeroes the same tensors in place.
    try:
        found = {}
        set_grads(params, local_grads(shapes, rank, 0, dev))
        optimizer.zero_grad()
        found["zero_grad()"] = "gradients set to None" if all(p.grad is None for p in params) else "gradients kept"
        set_grads(params, local_grads(shapes, rank, 1, dev))
        optimizer.zero_grad(set_to_none=True)
        found["zero_grad(set_to_none=True)"] = ("gradients set to None" if all(p.grad is None for p in params)
                                                else "gradients kept")
        set_grads(params, local_grads(shapes, rank, 2, dev))
        kept = [p.grad for p in params]
        optimizer.zero_grad(set_to_none=False)
        found["zero_grad(set_to_none=False)"] = _zeroed_in_place(params, kept)
        # A parameter without a gradient (frozen, or unused by this step's loss) among others with
        # one: dpopt.Adam.zero_grad skips it and still clears every other gradient.
        for call, kwargs in (("zero_grad()", {}), ("zero_grad(set_to_none=False)", {"set_to_none": False})):
            set_grads(params, local_grads(shapes, rank, 3, dev))
            for i in without_grad:
                params[i].grad = None
            kept = [p.grad for p in params]
            optimizer.zero_grad(**kwargs)
            found[f"{call}, parameters {without_grad} without a gradient"] = (
                _zeroed_in_place(params, kept) if kwargs else
                "gradients set to None" if all(p.grad is None for p in params) else "gradients kept")
        out["zero_grad"] = found
    except Exception as e:
        out["zero_grad_error"] = _describe(e)

    # One parameter is an iterable of parameters too (a model of a single tensor, or a parameter
    # group of one): its size is not a multiple of the world size either.
    try:
        single_shape = [(numel(shapes),)]
        single = make_params(single_shape, seed=8, device=dev)
        want = reference_adam(single, single_shape, everyone, steps, **hyper)
        lone = ShardedAdam(single, **hyper)
        for step in range(steps):
            set_grads(single, local_grads(single_shape, rank, step, dev))
            lone.step()
        out["single"] = mismatch(single, want, ATOL, RTOL)
    except Exception as e:
        out["single_error"] = _describe(e)
    return out


def _zeroed_in_place(params, kept):
    """What zero_grad(set_to_none=False) did: dpopt.Adam zeroes each existing gradient tensor in
    place and leaves a missing one missing."""
    if any(p.grad is not g for p, g in zip(params, kept)):
        return "gradient tensors replaced or dropped"
    if any(g is not None and bool(g.any()) for g in kept):
        return "non-zero gradients left"
    return "the same tensors, zeroed"


ZERO_GRAD_WANTED = {"zero_grad()": "gradients set to None", "zero_grad(set_to_none=True)": "gradients set to None",
                    "zero_grad(set_to_none=False)": "the same tensors, zeroed"}


def _model(dev, seed):
    torch.manual_seed(seed)
    layers = [nn.Linear(TRAINER_SIZES[0], TRAINER_SIZES[1]), nn.Tanh(), nn.Linear(TRAINER_SIZES[1], TRAINER_SIZES[2])]
    return nn.Sequential(*layers).to(dev)


def _batch(step, rank, dev):
    g = torch.Generator().manual_seed(500 + 31 * step + rank)
    return (torch.randn(TRAINER_BATCH, TRAINER_SIZES[0], generator=g).to(dev),
            torch.randn(TRAINER_BATCH, TRAINER_SIZES[-1], generator=g).to(dev))


def _trainer_ranks(rank, world_size, hyper, steps):
    """Ranks start from different weights, as in the base's own trainer test: the trainer's
    broadcast makes them agree. Trained with dpopt.Adam and with ShardedAdam, both must match one
    process training rank 0's weights on the whole batch with torch.optim.Adam."""
    dev = one_thread_on_cpu(device_for_rank(rank))
    from dpopt import Adam, DataParallelTrainer, ShardedAdam

    out = {}
    for name, cls in (("Adam", Adam), ("ShardedAdam", ShardedAdam)):
        model = _model(dev, seed=1 if rank == 0 else 50 + rank)
        trainer = DataParallelTrainer(model, cls(model.parameters(), **hyper))
        for step in range(steps):
            trainer.train_step(*_batch(step, rank, dev))
        out[name] = [p.detach().cpu() for p in model.parameters()]
    if rank == 0:
        serial = _model(dev, seed=1)
        opt = torch.optim.Adam(serial.parameters(), **hyper)
        for step in range(steps):
            opt.zero_grad()
            batches = [_batch(step, r, dev) for r in range(world_size)]
            inputs, targets = torch.cat([b[0] for b in batches]), torch.cat([b[1] for b in batches])
            nn.MSELoss()(serial(inputs), targets).backward()
            opt.step()
        out["serial"] = [p.detach().cpu() for p in serial.parameters()]
    return out


def _location(name):
    try:
        import dpopt

        return locate(getattr(dpopt.ShardedAdam, name))
    except Exception:
        return None


def _without_grad(shapes):
    """Parameters left without a gradient in the zero_grad scenario: the first and one drawn other
    (never the last, so some gradient follows each of them)."""
    return [0, rng("zero_grad").randint(1, len(shapes) - 2)]


def _main_checks(shapes, hyper, steps):
    results = None
    total = numel(shapes)
    with check("sharded-adam-matches-adam", "functional",
               requirements=["step-reduces-local-grads", "step-matches-adam", "init-uneven-total",
                             "init-params-iterable", "hyperparams-as-adam", "backends"]) as c:
        c.measured.update(steps=steps, parameter_elements=total, tensors=len(shapes), lr=hyper["lr"],
                          beta1=hyper["betas"][0], beta2=hyper["betas"][1], eps=hyper["eps"],
                          weight_decay=hyper["weight_decay"])
        results = run_ranks(_ranks, args=(shapes, hyper, steps, _without_grad(shapes)), timeout=120)
        c.location = _location("step")
        n = len(results)
        bad = [(r, out["worst"]) for r, out in enumerate(results) if out["worst"]["bad_elements"]]
        c.measured["max_abs_diff"] = max(out["worst"]["abs_diff"] for out in results)
        if bad:
            rank, w = bad[0]
            c.measured["mismatched_elements"] = w["bad_elements"]
            c.fail(
                f"after {steps} steps on rank {rank} of {n}, {w['bad_elements']} of {total} parameter elements "
                f"differ from Adam applied to the rank-averaged gradients (largest: {w['abs_diff']:.3g} at "
                f"element {w['index']} of parameter {w['param']}, shape {tuple(shapes[w['param']])}; tolerance "
                f"{ATOL:g} + {RTOL:g}·|value|). Hyperparameters lr={hyper['lr']:.4g}, betas="
                f"({hyper['betas'][0]:.4g}, {hyper['betas'][1]:.4g}), eps={hyper['eps']:.3g}, weight_decay="
                f"{hyper['weight_decay']:.4g}; the {len(shapes)} tensors hold {total} elements, not a multiple "
                f"of the world size ({n})."
            )
    return results


def _follow_up_checks(results):
    with check("ranks-agree-after-step", "functional", location=_location("step"),
               requirements=["step-ranks-agree"]) as c:
        for rank, out in enumerate(results[1:], start=1):
            for i, (a, b) in enumerate(zip(results[0]["params"], out["params"])):
                if not torch.equal(a, b):
                    c.measured["max_abs_diff"] = float((a - b).abs().max())
                    c.fail(f"after step() rank {rank} holds different values than rank 0 for parameter {i} "
                           f"(shape {tuple(a.shape)}): the updated parameters must reach every rank")

    with check("defaults-as-adam", "structure", location=_location("__init__"),
               requirements=["init-signature"]) as c:
        for rank, out in enumerate(results):
            if "defaults_error" in out:
                c.fail(f"rank {rank}: ShardedAdam(params) with the default hyperparameters failed: "
                       f"{out['defaults_error']}")
            w = out["defaults"]
            if w["bad_elements"]:
                c.measured.update(max_abs_diff=w["abs_diff"], mismatched_elements=w["bad_elements"])
                c.fail(f"rank {rank}: ShardedAdam(params) built without hyperparameters does not step as one built "
                       f"with the defaults the prompt states (lr=1e-3, betas=(0.9, 0.999), eps=1e-8, "
                       f"weight_decay=0.0): after {DEFAULT_STEPS} steps {w['bad_elements']} elements differ, up to "
                       f"{w['abs_diff']:.3g}")

    with check("zero-grad-as-adam", "structure", location=_location("zero_grad"),
               requirements=["zero-grad-as-adam"]) as c:
        for rank, out in enumerate(results):
            if "zero_grad_error" in out:
                c.fail(f"rank {rank}: zero_grad failed: {out['zero_grad_error']}")
            wanted = {call: ZERO_GRAD_WANTED[call.split(",")[0]] for call in out["zero_grad"]}
            wrong = {call: got for call, got in out["zero_grad"].items() if got != wanted[call]}
            if wrong:
                c.fail(f"rank {rank}: zero_grad does not behave like dpopt.Adam.zero_grad: " + "; ".join(
                    f"{call} gave {got}, expected {wanted[call]}" for call, got in wrong.items()))

    with check("sharded-adam-one-parameter", "functional", location=_location("__init__"),
               requirements=["init-params-iterable", "step-matches-adam", "init-uneven-total"]) as c:
        for rank, out in enumerate(results):
            if "single_error" in out:
                c.fail(f"rank {rank}: ShardedAdam over a single parameter failed: {out['single_error']}")
            w = out["single"]
            if w["bad_elements"]:
                c.measured.update(max_abs_diff=w["abs_diff"], mismatched_elements=w["bad_elements"])
                c.fail(f"rank {rank}: ShardedAdam over a single parameter tensor does not step as Adam on the "
                       f"averaged gradients: {w['bad_elements']} elements differ, up to {w['abs_diff']:.3g}")


def _trainer_check(hyper, steps):
    with check("trainer-matches-adam", "functional",
               requirements=["trainer-adam", "trainer-sharded", "step-matches-adam"]) as c:
        results = run_ranks(_trainer_ranks, args=(hyper, steps), timeout=120)
        try:
            import dpopt

            c.location = locate(dpopt.DataParallelTrainer.train_step)
        except Exception:
            pass
        serial = results[0]["serial"]
        for name in ("Adam", "ShardedAdam"):
            for rank, out in enumerate(results):
                w = mismatch(out[name], serial, 1e-5, 1e-4)
                if w["bad_elements"]:
                    c.measured.update(max_abs_diff=w["abs_diff"], mismatched_elements=w["bad_elements"])
                    c.fail(
                        f"DataParallelTrainer with {name}: ranks start from different weights (the trainer "
                        f"broadcasts rank 0's); after {steps} train_step calls rank {rank}'s parameter {w['param']} "
                        f"differs from one process training rank 0's weights on the whole batch with Adam "
                        f"({w['bad_elements']} elements, up to {w['abs_diff']:.3g})"
                    )


def main():
    shapes, hyper, steps = drawn_shapes("api"), drawn_hyper(), int(param("steps", 3))
    results = _main_checks(shapes, hyper, steps)
    if results is None:
        for name, category in (("ranks-agree-after-step", "functional"), ("defaults-as-adam", "structure"),
                               ("zero-grad-as-adam", "structure"), ("sharded-adam-one-parameter", "functional")):
            emit(name, category, "skipped", "ShardedAdam did not complete the steps (see sharded-adam-matches-adam)")
    else:
        _follow_up_checks(results)
    _trainer_check(hyper, steps)

    with check("sharded-adam-interface", "structure", requirements=["import-sharded-adam", "init-signature"]) as c:
        from dpopt import ShardedAdam

        c.location = locate(ShardedAdam)
        require_signature(ShardedAdam, "__init__", ["params", "lr", "betas", "eps", "weight_decay", "group"])
        require_signature(ShardedAdam, "step", [])
        require_signature(ShardedAdam, "zero_grad", ["set_to_none"])
        require_signature(ShardedAdam, "state_dict", [])
        require_signature(ShardedAdam, "load_state_dict", ["state_dict"])

    with check("trainer-interface", "structure", requirements=["trainer-sharded"]) as c:
        from dpopt import DataParallelTrainer

        c.location = locate(DataParallelTrainer)
        require_signature(DataParallelTrainer, "train_step", ["inputs", "targets"])


if __name__ == "__main__":
    main()
