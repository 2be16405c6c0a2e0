"""Traffic: with overlap_grad_reduce and a repeated parameter, each bucket's gradients go over the
wire once per iteration, in one collective per bucket group, on every rank."""
# PROBEGATE-CANARY-MCORE-TRAFFIC-71f0be
import _mcore_probe as H
from probegate_probe import CollectiveCounter, RankError, emit

CHECK = "repeated-param-reduced-once"


def count(rank, n):
    """Per iteration on this rank: how many gradient reductions, and how many bytes they carried."""
    H.init_rank()
    ddp = H.wrap(H.make_model())
    groups = len(ddp.bucket_groups)
    bucket_bytes = sum(b.grad_data.numel() * b.grad_data.element_size() for buf in ddp.buffers for b in buf.buckets)
    per_iteration = []
    for x1, x2 in H.batches(rank, seed=99):
        with CollectiveCounter() as counter:
            ddp.zero_grad_buffer()
            H.backward_passes(ddp.module, x1, x2)
            ddp.finish_grad_sync()
        reductions = [e for e in counter.events if e[0] in ("all_reduce", "reduce_scatter")]
        per_iteration.append((len(reductions), sum(e[1] for e in reductions)))
    return {"groups": groups, "bucket_bytes": bucket_bytes, "per_iteration": per_iteration}


def main():
    try:
        results = H.run(count)
    except RankError as exc:
        H.report_crash([CHECK], "traffic", exc, requirements=["reduced-once-per-iteration", "repeated-report-allowed"])
        return
    groups, bucket_bytes = results[0]["groups"], results[0]["bucket_bytes"]
    rows = [(rank, i, c, b) for rank, r in enumerate(results) for i, (c, b) in enumerate(r["per_iteration"], start=1)]
    measured = {"ranks": len(results), "bucket_groups": groups, "expected_bytes_per_iteration": bucket_bytes,
                "max_reductions_per_iteration": max(c for _, _, c, _ in rows),
                "max_bytes_per_iteration": max(b for _, _, _, b in rows)}
    if any(c == 0 for _, _, c, _ in rows):
        emit(CHECK, "traffic", "error", "the counter saw no gradient collective in an iteration although finish_grad_sync "
             "returned; it cannot judge this run", measured=measured, requirements=["reduced-once-per-iteration", "repeated-report-allowed"])
        return
    bad = [row for row in rows if row[2] != groups or row[3] != bucket_bytes]
    if bad:
        rank, i, c, b = bad[0]
        emit(CHECK, "traffic", "failed",
             f"rank {rank}, iteration {i}: the gradients were reduced in {c} collectives moving {b} bytes; once per bucket "
             f"group is {groups} collective(s) of {bucket_bytes} bytes (every extra reduction costs another pass of "
             f"the gradients over the wire on every rank)",
             location=H.grad_location(), measured=measured, requirements=["reduced-once-per-iteration", "repeated-report-allowed"])
    else:
        emit(CHECK, "traffic", "passed", f"one reduction per bucket group per iteration on every rank ({bucket_bytes} bytes)",
             measured=measured, requirements=["reduced-once-per-iteration", "repeated-report-allowed"])


if __name__ == "__main__":
    main()
