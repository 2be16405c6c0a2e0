"""ShardedAdam.step must cost about what a flat ZeRO-1 step costs, for a model of many small tensors."""
# PROBEGATE-CANARY-SHARDED-TIME-c07d5e13
import math

import torch
import torch.distributed as dist

from probegate_probe import check, device_for_rank, locate, run_ranks, time_ratio
from _shared import drawn_hyper, local_grads, make_params, set_grads, one_thread_on_cpu

# Many small tensors, as the norms and biases of a deep model: per-tensor overheads show.
SHAPES = [(48, 32), (32,)] * 96
MARGIN = 2.0


class FlatZero1Adam:
    """A straightforward ZeRO-1 Adam: one reduce-scatter, a shard update, one all-gather."""

    def __init__(self, params, lr, betas, eps, weight_decay):
        self.params = params
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.n, self.rank = dist.get_world_size(), dist.get_rank()
        self.numel = sum(p.numel() for p in params)
        self.shard = -(-self.numel // self.n)
        self.m = torch.zeros(self.shard, device=params[0].device)
        self.v = torch.zeros_like(self.m)
        self.t = 0
        self.nccl = dist.get_backend() == "nccl"

    def _flat(self, tensors):
        pad = self.shard * self.n - self.numel
        return torch.cat([t.reshape(-1) for t in tensors] + ([self.m.new_zeros(pad)] if pad else []))

    @torch.no_grad()
    def step(self):
        flat = self._flat([p.grad for p in self.params])
        g = torch.empty_like(self.m)
        if self.nccl:
            (getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base)(g, flat)
        else:
            received = torch.empty_like(flat)
            dist.all_to_all_single(received, flat)
            torch.sum(received.view(self.n, -1), dim=0, out=g)
        g.div_(self.n)
        p = self._flat([p.detach() for p in self.params])[self.rank * self.shard:(self.rank + 1) * self.shard]
        self.t += 1
        beta1, beta2 = self.betas
        g = g.add(p, alpha=self.weight_decay)
        self.m.mul_(beta1).add_(g, alpha=1 - beta1)
        self.v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        denom = (self.v.sqrt() / math.sqrt(1 - beta2 ** self.t)).add_(self.eps)
        p.addcdiv_(self.m, denom, value=-self.lr / (1 - beta1 ** self.t))
        full = self.m.new_empty(self.shard * self.n)
        if self.nccl:
            (getattr(dist, "all_gather_into_tensor", None) or dist._all_gather_base)(full, p)
        else:
            dist.all_gather(list(full.chunk(self.n)), p)
        offset = 0
        for q in self.params:
            q.copy_(full[offset:offset + q.numel()].view_as(q))
            offset += q.numel()


def _ranks(rank, world_size, hyper):
    dev = one_thread_on_cpu(device_for_rank(rank))
    grads = local_grads(SHAPES, rank, 0, dev)
    ref_params = make_params(SHAPES, seed=21, device=dev)
    set_grads(ref_params, grads)
    reference = FlatZero1Adam(ref_params, **hyper)

    from dpopt import ShardedAdam

    params = make_params(SHAPES, seed=21, device=dev)
    set_grads(params, grads)
    candidate = ShardedAdam(params, **hyper)
    repeats, warmup = 9, 1

    def arms(i):
        # Every step gets gradients of its own, made before timing, one copy per arm (a step may
        # change its gradients in place): a cached or skipped step has nothing to answer with, and
        # each step's parameters are compared with the reference's.
        return local_grads(SHAPES, rank, i + 1, dev), local_grads(SHAPES, rank, i + 1, dev)

    def candidate_step(grads, _):
        for p, g in zip(params, grads):
            p.grad = g
        candidate.step()
        return params

    def reference_step(_, grads):
        for p, g in zip(ref_params, grads):
            p.grad = g
        reference.step()
        return ref_params

    # time_ratio synchronises CUDA itself; the barrier keeps the ranks' timed calls aligned.
    r = time_ratio(candidate_step, reference_step, repeats=repeats, warmup=warmup, margin=MARGIN, sync=dist.barrier,
                   inputs=arms, mismatch="record")
    return {"median": r.median, "candidate_s": r.candidate_s, "reference_s": r.reference_s, "mismatches": r.mismatches,
            "steps": warmup + repeats}


def _step_location():
    try:
        import dpopt

        return locate(dpopt.ShardedAdam.step)
    except Exception:
        return None


def main():
    results = None
    with check("step-time", "time", requirements=["time-step", "traffic-bucketed"]) as c:
        results = run_ranks(_ranks, args=(drawn_hyper(),))
        c.location = _step_location()
        # Collectives keep the ranks in lock-step, so their ratios agree; the mean smooths the noise.
        ratio = sum(out["median"] for out in results) / len(results)
        c.measured.update(median_ratio=round(ratio, 3), margin=MARGIN, tensors=len(SHAPES),
                          candidate_s=results[0]["candidate_s"], reference_s=results[0]["reference_s"])
        if ratio > MARGIN:
            c.fail(
                f"ShardedAdam.step on {len(SHAPES)} small parameter tensors takes {ratio:.1f}× the time of a flat "
                f"ZeRO-1 step (one reduce-scatter, one shard update, one all-gather; allowed {MARGIN}×): "
                f"per-tensor collectives or per-tensor updates dominate the step"
            )

    if results is None:
        return
    # The timed steps' parameters against the reference's on the same gradients: a step that is fast
    # because it skipped or cached work shows here. A check of its own, in the category of the value
    # checks: a wrong update is not a slow one.
    with check("timed-steps-match-reference", "functional", location=_step_location(),
               requirements=["step-matches-adam"]) as c:
        bad = [f"rank {rank}: {m}" for rank, out in enumerate(results) for m in out["mismatches"]]
        c.measured.update(mismatched_steps=len(bad), steps=results[0]["steps"] * len(results))
        if bad:
            c.fail(f"after {len(bad)} of the timed steps the parameters differ from a flat ZeRO-1 Adam's on the same "
                   f"gradients (allclose, rtol 1e-4): {bad[0]}")


if __name__ == "__main__":
    main()
