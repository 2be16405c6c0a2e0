"""Data-parallel training: every rank holds the whole model and a different slice of each batch."""
import torch
import torch.distributed as dist
from torch import nn

from dpopt.comm import all_reduce_mean_


class DataParallelTrainer:
    """Runs forward/backward on this rank's batch, averages gradients over ranks, steps the optimizer.

    The model's parameters are broadcast from rank 0 of ``group`` at construction so that every
    rank starts from the same weights.
    """

    def __init__(self, model, optimizer, loss_fn=None, group=None):
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn if loss_fn is not None else nn.MSELoss()
        self.group = group
        src = dist.get_global_rank(group, 0) if group is not None and hasattr(dist, "get_global_rank") else 0
        with torch.no_grad():
            for p in self.model.parameters():
                dist.broadcast(p, src=src, group=group)

    def _average_gradients(self):
        params = [p for p in self.model.parameters() if p.requires_grad]
        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        # One flat all-reduce: a collective per parameter would pay its latency once per tensor.
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        all_reduce_mean_(flat, self.group)
        offset = 0
        for p in params:
            n = p.numel()
            p.grad.copy_(flat[offset:offset + n].view_as(p.grad))
            offset += n

    def train_step(self, inputs, targets):
        """One optimizer step on this rank's ``inputs``/``targets``; returns this rank's loss."""
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(inputs), targets)
        loss.backward()
        self._average_gradients()
        self.optimizer.step()
        return loss.item()
