"""distributed_masked_mean across gloo ranks that select different numbers of elements: the global
mean counts every selected element once, whichever rank holds it. The official distributed tests
need NCCL and one GPU per rank (left out on CPU), and their ranks each select one element, so a mean
of per-rank means would pass them."""
# PROBEGATE-CANARY-MASKED-DIST-93a6c5d4
import torch

from probegate_probe import ProbeFailure, check, locate, rng, run_ranks, world_size


def rank_data(rank, n, seed):
    """Rank r holds n + 7r values and selects a drawn number of them (1 … all), different per rank."""
    g = torch.Generator()
    g.manual_seed(seed * 101 + rank)
    size = n + 7 * rank
    values = torch.randn(size, generator=g) + rank
    mask = torch.zeros(size)
    chosen = torch.randperm(size, generator=g)[: max(1, (size * (rank + 1)) // (world_size_hint() + 2))]
    mask[chosen] = 1.0
    return values, mask


def world_size_hint():
    return max(2, world_size())


def rank_fn(rank, size, n, seed):
    values, mask = rank_data(rank, n, seed)
    import verl.utils.torch_functional as tf

    out = tf.distributed_masked_mean(values, mask)
    return {"mean": float(out), "location": locate(tf.distributed_masked_mean)}


def main():
    r = rng("distributed")
    n, seed = r.randint(9, 40), r.randrange(10**6)
    size = world_size_hint()
    with check("distributed-global-mean", "functional", requirements=["distributed-kept"]) as c:
        outs = run_ranks(rank_fn, world_size=size, args=(n, seed), backend="gloo", timeout=240)
        data = [rank_data(rank, n, seed) for rank in range(size)]
        total = sum(float((v.double() * m.double()).sum()) for v, m in data)
        count = sum(float(m.sum()) for _, m in data)
        want = total / count
        c.measured = {"ranks": size, "selected": count, "expected": want}
        loc = outs[0]["location"]
        for rank, o in enumerate(outs):
            if not abs(o["mean"] - want) <= 1e-5 * max(1.0, abs(want)):
                raise ProbeFailure("distributed_masked_mean on rank %d gives %r, expected %r: the mean of the %d selected elements of all %d ranks (they select %s)" % (rank, o["mean"], want, int(count), size, ", ".join(str(int(m.sum())) for _, m in data)), location=loc, measured={"got": o["mean"], "expected": want})


if __name__ == "__main__":
    main()
