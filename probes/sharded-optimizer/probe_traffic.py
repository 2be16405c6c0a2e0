"""Bytes a ShardedAdam training step puts on the wire: one reduce-scatter plus one all-gather."""
# PROBEGATE-CANARY-SHARDED-TRAFFIC-3e8b71f6
import torch
from torch import nn

from probegate_probe import CollectiveCounter, check, device_for_rank, locate, param, run_ranks
from _shared import drawn_hyper, mib, one_thread_on_cpu

# About 3 MiB of parameters (the middle width is drawn, odd, so the total is never a multiple of
# the world size). Bytes are counted, not timed, so the size only needs to dwarf loss and padding.
BATCH = 4
SLACK_RATIO, SLACK_BYTES = 1.10, 64 * 1024


def _sizes():
    hidden = int(param("traffic_hidden", 511))
    return [256, 1024, hidden | 1, 7]


def _model(dev, sizes):
    torch.manual_seed(0)
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers).to(dev)


def _ranks(rank, world_size, sizes, hyper):
    dev = one_thread_on_cpu(device_for_rank(rank))
    model = _model(dev, sizes)
    g = torch.Generator().manual_seed(100 + rank)
    inputs = torch.randn(BATCH, sizes[0], generator=g).to(dev)
    targets = torch.randn(BATCH, sizes[-1], generator=g).to(dev)

    from dpopt import DataParallelTrainer, ShardedAdam

    trainer = DataParallelTrainer(model, ShardedAdam(model.parameters(), **hyper))
    trainer.train_step(inputs, targets)  # first step outside the count: lazy set-up may talk once
    with CollectiveCounter() as counter:
        trainer.train_step(inputs, targets)
    if counter.uncounted:
        raise RuntimeError(f"the collective counter could not size {counter.uncounted} collective(s)")
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    return {"bytes": counter.total_bytes, "by_op": dict(counter.by_op), "calls": dict(counter.calls),
            "param_bytes": param_bytes, "mode": counter.mode}


def main():
    with check("step-traffic", "traffic", requirements=["traffic-volume", "trainer-sharded"]) as c:
        results = run_ranks(_ranks, args=(_sizes(), drawn_hyper()))
        try:
            import dpopt

            c.location = locate(dpopt.ShardedAdam.step)
        except Exception:
            pass
        n = len(results)
        param_bytes = results[0]["param_bytes"]
        expected = 2 * (n - 1) / n * param_bytes
        allowed = int(expected * SLACK_RATIO + SLACK_BYTES)
        worst_rank = max(range(n), key=lambda r: results[r]["bytes"])
        out = results[worst_rank]
        c.measured.update(bytes_per_step=out["bytes"], expected_bytes=int(expected), allowed_bytes=allowed,
                          param_bytes=param_bytes, world_size=n, collective_calls=sum(out["calls"].values()))
        c.measured.update({f"bytes_{op}": int(b) for op, b in out["by_op"].items()})
        if out["bytes"] > allowed:
            ops = ", ".join(f"{op} {mib(b)} in {out['calls'].get(op, 0)} call(s)" for op, b in out["by_op"].items())
            c.fail(
                f"one DataParallelTrainer.train_step with ShardedAdam moves {mib(out['bytes'])} per rank (rank "
                f"{worst_rank}: {ops}); a reduce-scatter of the gradients plus an all-gather of the parameters "
                f"moves 2·(n−1)/n × {mib(param_bytes)} = {mib(expected)} (allowed {mib(allowed)}). Gradients "
                f"are reduced in full (all-reduce) or more than once."
            )
        if out["bytes"] < (n - 1) / n * param_bytes:
            c.fail(
                f"one training step moves only {mib(out['bytes'])} per rank over {n} ranks: less than one "
                f"reduce-scatter of {mib(param_bytes)} of gradients, so gradients cannot be averaged across ranks"
            )


if __name__ == "__main__":
    main()
