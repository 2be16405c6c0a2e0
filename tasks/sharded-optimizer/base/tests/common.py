"""Shared fixtures of the official tests: one model shape, one deterministic data stream."""
import torch

from dpopt import MLP

SIZES = [8, 16, 4]
PER_RANK_BATCH = 4
LR = 1e-2


def make_model(seed=1, device="cpu"):
    return MLP(SIZES, seed=seed).to(device)


def global_batch(step, world_size):
    g = torch.Generator().manual_seed(1000 + step)
    inputs = torch.randn(PER_RANK_BATCH * world_size, SIZES[0], generator=g)
    targets = torch.randn(PER_RANK_BATCH * world_size, SIZES[-1], generator=g)
    return inputs, targets


def rank_batch(step, rank, world_size, device="cpu"):
    inputs, targets = global_batch(step, world_size)
    rows = slice(rank * PER_RANK_BATCH, (rank + 1) * PER_RANK_BATCH)
    return inputs[rows].to(device), targets[rows].to(device)


def serial_training(steps, world_size, optimizer_cls, **kwargs):
    """The same training on one process with the whole batch: what data parallelism must reproduce."""
    model = make_model()
    optimizer = optimizer_cls(model.parameters(), lr=LR, **kwargs)
    loss_fn = torch.nn.MSELoss()
    for step in range(steps):
        optimizer.zero_grad()
        inputs, targets = global_batch(step, world_size)
        loss_fn(model(inputs), targets).backward()
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


def cpu_params(model):
    return [p.detach().cpu().clone() for p in model.parameters()]
