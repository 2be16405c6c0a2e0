"""Functional: with overlap_grad_reduce, a repeated parameter's bucket is reduced once all of the
iteration's contributions are in, and (from the second iteration) from the backward hook."""
# PROBEGATE-CANARY-MCORE-FUNCTIONAL-a4c2d9
import _mcore_probe as H
from probegate_probe import emit

CHECK = "repeated-param-reduced-when-ready"
VALUES = "repeated-param-grad-value"


def main():
    H.init_distributed()
    model = H.make_model()
    data = H.batches()
    expected = H.expected_gradients(model, data)
    ddp = H.wrap(model)
    where = H.param_slices(ddp)
    mode = H.GradCollectives(ddp)
    finals = []
    try:
        with mode:
            for it, (x1, x2) in enumerate(data, start=1):
                mode.iteration, mode.phase = it, "backward"
                ddp.zero_grad_buffer()
                H.backward_passes(ddp.module, x1, x2)
                mode.phase = "finish"
                ddp.finish_grad_sync()
                finals.append({n: p.main_grad.detach().float().clone() for n, p in ddp.module.named_parameters()})
    except Exception as exc:  # the parent's "Cannot set grad twice", say
        H.report_crash(CHECK, "functional", exc)
        return

    unseen = [it for it in range(1, H.ITERATIONS + 1) if not any(r["iteration"] == it for r in mode.records)]
    if unseen:
        # finish_grad_sync returned, so a reduction was issued: the probe did not see it (a gap of this torch).
        emit(CHECK, "functional", "error", f"the probe saw no gradient collective in iteration(s) {unseen}; it cannot judge this run")
        return
    problems = []
    for it in range(1, H.ITERATIONS + 1):
        issued = [r for r in mode.records if r["iteration"] == it]
        first = issued[0]
        for name, (b, start, numel) in where.items():
            got = first["buffers"][b][start:start + numel].view_as(expected[it - 1][name])
            want = expected[it - 1][name]
            if not H.torch.allclose(got, want, rtol=1e-4, atol=1e-6):
                share = float((got * want).sum() / (want * want).sum().clamp_min(1e-30))
                problems.append(
                    f"iteration {it}: the bucket's reduction was issued before every gradient contribution of the "
                    f"iteration had arrived ({name} held {share:.0%} of its gradient when the collective was issued)")
                break
        if it >= 2 and first["phase"] != "backward":
            problems.append(f"iteration {it}: the reduction was issued only in finish_grad_sync, not overlapped with the backward pass")
    measured = {"iterations": H.ITERATIONS, "reductions": len(mode.records),
                "overlapped": sum(1 for r in mode.records if r["phase"] == "backward")}
    if problems:
        emit(CHECK, "functional", "failed", "; ".join(problems[:3]), location=H.grad_location(), measured=measured)
    else:
        emit(CHECK, "functional", "passed", "each iteration's reduction was issued after all contributions of the repeated parameter, from the backward hook", measured=measured)

    wrong = []
    for it, final in enumerate(finals, start=1):
        for name, want in expected[it - 1].items():
            if not H.torch.allclose(final[name], want, rtol=1e-4, atol=1e-6):
                wrong.append(f"iteration {it}: {name}.main_grad after finish_grad_sync is not the sum of its contributions")
                break
    if wrong:
        emit(VALUES, "functional", "failed", "; ".join(wrong[:3]), location=H.grad_location())
    else:
        emit(VALUES, "functional", "passed", "main_grad after finish_grad_sync is the full gradient in every iteration")


if __name__ == "__main__":
    main()
