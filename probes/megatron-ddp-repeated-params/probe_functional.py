"""Functional: with overlap_grad_reduce, a repeated parameter's bucket is reduced once all of the
iteration's contributions are in, and (from the second iteration) from the backward hook, on a
two-layer model and on one whose bucket group holds a single parameter; what held before the
change still holds."""
# PROBEGATE-CANARY-MCORE-FUNCTIONAL-a4c2d9
import _mcore_probe as H
from probegate_probe import RankError, emit

CHECK = "repeated-param-reduced-when-ready"
VALUES = "repeated-param-grad-value"
EARLY = "finish-before-launch-asserts"
NO_OVERLAP = "no-overlap-path-unchanged"


def overlapped(rank, n, kind="repeated"):
    """Train with overlap_grad_reduce; judge each iteration's first reduction and main_grad after it."""
    H.init_rank()
    model = H.make_model(kind=kind)
    data = H.batches(rank)
    local = H.local_gradients(model, data)
    mean = H.mean_gradients(model, n)
    ddp = H.wrap(model)
    where = H.param_slices(ddp)
    mode = H.GradCollectives(ddp)
    finals = []
    with mode:
        for it, (x1, x2) in enumerate(data, start=1):
            mode.iteration, mode.phase = it, "backward"
            ddp.zero_grad_buffer()
            H.backward_passes(ddp.module, x1, x2)
            mode.phase = "finish"
            ddp.finish_grad_sync()
            finals.append({k: p.main_grad.detach().float().clone() for k, p in ddp.module.named_parameters()})

    unseen = [it for it in range(1, H.ITERATIONS + 1) if not any(r["iteration"] == it for r in mode.records)]
    problems = []
    for it in range(1, H.ITERATIONS + 1):
        issued = [r for r in mode.records if r["iteration"] == it]
        if not issued:
            continue
        first = issued[0]
        for name, (b, start, numel) in where.items():
            want = local[it - 1][name]
            got = first["buffers"][b][start:start + numel].view_as(want)
            if not H.holds_full_gradient(got, want, n):
                share = float((got * want).sum() / (want * want).sum().clamp_min(1e-30))
                problems.append(
                    f"iteration {it}: the bucket's reduction was issued before every gradient contribution of the "
                    f"iteration had arrived ({name} held {share:.0%} of its local gradient when the collective was issued)")
                break
        if it == 1 and first["phase"] != "finish":
            problems.append("iteration 1: the reduction was issued from the backward hook, not by finish_grad_sync")
        if it >= 2 and first["phase"] != "backward":
            problems.append(f"iteration {it}: the reduction was issued only in finish_grad_sync, not overlapped with the backward pass")
    wrong = []
    for it, final in enumerate(finals, start=1):
        for name, want in mean[it - 1].items():
            if not H.torch.allclose(final[name], want, rtol=1e-4, atol=1e-6):
                wrong.append(f"iteration {it}: {name}.main_grad after finish_grad_sync is not the sum of its "
                             f"contributions reduced over the {n} data-parallel rank(s)")
                break
    return {"unseen": unseen, "problems": problems, "wrong": wrong, "reductions": len(mode.records),
            "overlapped": sum(1 for r in mode.records if r["phase"] == "backward")}


def early_and_plain(rank, n):
    """Without overlap, the synchronous path is unchanged; finish_grad_sync before the launch raises."""
    H.init_rank()
    out = {"early": [], "plain": []}
    mean = H.mean_gradients(H.make_model(), n)
    data = H.batches(rank)

    plain = H.wrap(H.make_model(), overlap=False)
    for it, (x1, x2) in enumerate(data, start=1):
        plain.zero_grad_buffer()
        H.backward_passes(plain.module, x1, x2)
        plain.finish_grad_sync()
        for name, p in plain.module.named_parameters():
            if not H.torch.allclose(p.main_grad.float(), mean[it - 1][name], rtol=1e-4, atol=1e-6):
                out["plain"].append(f"without overlap_grad_reduce, iteration {it}: {name}.main_grad after "
                                    "finish_grad_sync is not the reduced sum of its contributions")
                break
    group = plain.bucket_groups[0]
    try:
        group.register_grad_ready(next(iter(group.params)))
        out["plain"].append("without overlap_grad_reduce, register_grad_ready() did not raise AssertionError")
    except AssertionError:
        pass

    # Every rank takes the same path through the submission here: a failure is the same on each, so the
    # ranks stay in step and the synchronous path's result above is still reported.
    ddp = H.wrap(H.make_model())
    try:
        for it, (x1, x2) in enumerate(data[:2], start=1):
            ddp.zero_grad_buffer()
            raised = []

            def finish_too_early():
                try:
                    ddp.finish_grad_sync()
                except AssertionError:
                    raised.append(True)

            H.backward_passes(ddp.module, x1, x2, between=finish_too_early if it == 2 else None)
            if it == 2 and not raised:
                out["early"].append("iteration 2: finish_grad_sync() called after the model's loss but before the auxiliary "
                                    "loss (the repeated parameter had reported once of twice, so the reduction was not "
                                    "launched yet) did not raise AssertionError")
            ddp.finish_grad_sync()
            for name, p in ddp.module.named_parameters():
                if not H.torch.allclose(p.main_grad.float(), mean[it - 1][name], rtol=1e-4, atol=1e-6):
                    out["early"].append(f"iteration {it}: {name}.main_grad is wrong after the full iteration")
                    break
    except Exception as exc:  # noqa: BLE001 - the submission's failure, reported as this check's
        out["early"].append(f"after finish_grad_sync() was called too early, the iteration failed: "
                            f"{type(exc).__name__}: {str(exc)[:200]}")
    return out


def both_models():
    """overlapped() on the two-layer model, then on a model whose one bucket group holds a single
    parameter that reports twice: per rank, the problems of both, the second's named."""
    results = H.run(overlapped)
    single = H.run(overlapped, "one-param")
    for r, s in zip(results, single):
        r["unseen"] = sorted(set(r["unseen"]) | set(s["unseen"]))
        r["problems"] += [f"with a bucket group of one parameter: {p}" for p in s["problems"]]
        r["wrong"] += [f"with a bucket group of one parameter: {w}" for w in s["wrong"]]
    return results


def main():
    try:
        results = both_models()
    except RankError as exc:  # the parent's "Cannot set grad twice", say
        H.report_crash([CHECK, VALUES], "functional", exc,
                       requirements=["repeated-report-allowed", "launch-after-last-contribution", "first-iteration-at-finish",
                        "overlap-from-second-iteration", "grad-values"])
        results = None
    if results is not None:
        measured = {"ranks": len(results), "iterations": H.ITERATIONS, "reductions": results[0]["reductions"],
                    "overlapped": results[0]["overlapped"]}
        unseen = sorted({it for r in results for it in r["unseen"]})
        if unseen:
            # finish_grad_sync returned, so a reduction was issued: the probe did not see it (a gap of this torch).
            emit(CHECK, "functional", "error", f"the probe saw no gradient collective in iteration(s) {unseen}; it cannot judge this run",
                 measured=measured, requirements=["launch-after-last-contribution"])
        else:
            problems = [f"rank {rank}: {p}" for rank, r in enumerate(results) for p in r["problems"]]
            if problems:
                emit(CHECK, "functional", "failed", "; ".join(problems[:3]), location=H.grad_location(), measured=measured,
                     requirements=["repeated-report-allowed", "launch-after-last-contribution",
                                   "first-iteration-at-finish", "overlap-from-second-iteration"])
            else:
                emit(CHECK, "functional", "passed", "each iteration's reduction was issued after all contributions of the "
                     "repeated parameter: by finish_grad_sync in the first, from the backward hook after it", measured=measured,
                     requirements=["repeated-report-allowed", "launch-after-last-contribution",
                                   "first-iteration-at-finish", "overlap-from-second-iteration"])
        wrong = [f"rank {rank}: {w}" for rank, r in enumerate(results) for w in r["wrong"]]
        if wrong:
            emit(VALUES, "functional", "failed", "; ".join(wrong[:3]), location=H.grad_location(), requirements=["grad-values"])
        else:
            emit(VALUES, "functional", "passed", "main_grad after finish_grad_sync is the full reduced gradient in every iteration",
                 requirements=["grad-values"])

    try:
        rest = H.run(early_and_plain)
    except RankError as exc:
        H.report_crash([EARLY, NO_OVERLAP], "functional", exc, requirements=["finish-asserts-before-launch", "no-overlap-unchanged"])
        return
    early = [f"rank {rank}: {p}" for rank, r in enumerate(rest) for p in r["early"]]
    plain = [f"rank {rank}: {p}" for rank, r in enumerate(rest) for p in r["plain"]]
    if early:
        emit(EARLY, "functional", "failed", "; ".join(early[:3]), location=H.grad_location(), requirements=["finish-asserts-before-launch"])
    else:
        emit(EARLY, "functional", "passed", "finish_grad_sync() before the reduction was launched raised AssertionError",
             requirements=["finish-asserts-before-launch"])
    if plain:
        emit(NO_OVERLAP, "functional", "failed", "; ".join(plain[:3]), location=H.grad_location(), requirements=["no-overlap-unchanged"])
    else:
        emit(NO_OVERLAP, "functional", "passed", "without overlap_grad_reduce: synchronous reduction, register_grad_ready refused",
             requirements=["no-overlap-unchanged"])


if __name__ == "__main__":
    main()
