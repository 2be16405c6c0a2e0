"""Traffic: with overlap_grad_reduce and a repeated parameter, each bucket's gradients go over the
wire once per iteration, in one collective per bucket group."""
# PROBEGATE-CANARY-MCORE-TRAFFIC-71f0be
import _mcore_probe as H
from probegate_probe import CollectiveCounter, emit

CHECK = "repeated-param-reduced-once"


def main():
    H.init_distributed()
    model = H.make_model()
    data = H.batches(seed=99)
    ddp = H.wrap(model)
    groups = len(ddp.bucket_groups)
    bucket_bytes = sum(b.grad_data.numel() * b.grad_data.element_size() for buf in ddp.buffers for b in buf.buckets)
    per_iteration = []
    try:
        for x1, x2 in data:
            with CollectiveCounter() as counter:
                ddp.zero_grad_buffer()
                H.backward_passes(ddp.module, x1, x2)
                ddp.finish_grad_sync()
            reductions = [e for e in counter.events if e[0] in ("all_reduce", "reduce_scatter")]
            per_iteration.append((len(reductions), sum(e[1] for e in reductions)))
    except Exception as exc:
        H.report_crash(CHECK, "traffic", exc)
        return
    measured = {"bucket_groups": groups, "expected_bytes_per_iteration": bucket_bytes,
                "max_reductions_per_iteration": max(n for n, _ in per_iteration),
                "max_bytes_per_iteration": max(b for _, b in per_iteration)}
    if any(n == 0 for n, _ in per_iteration):
        emit(CHECK, "traffic", "error", "the counter saw no gradient collective in an iteration although finish_grad_sync returned; it cannot judge this run", measured=measured)
        return
    bad = [(i, n, b) for i, (n, b) in enumerate(per_iteration, start=1) if n != groups or b != bucket_bytes]
    if bad:
        i, n, b = bad[0]
        emit(CHECK, "traffic", "failed",
             f"iteration {i}: the gradients were reduced in {n} collectives moving {b} bytes; once per bucket group is "
             f"{groups} collective(s) of {bucket_bytes} bytes (on n ranks every extra reduction costs a full pass over the gradients, "
             f"and a second SUM counts every gradient n times)",
             location=H.grad_location(), measured=measured)
    else:
        emit(CHECK, "traffic", "passed", f"one reduction per bucket group per iteration ({bucket_bytes} bytes)", measured=measured)


if __name__ == "__main__":
    main()
