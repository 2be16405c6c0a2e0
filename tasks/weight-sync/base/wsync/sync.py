"""Trainer -> rollout weight synchronisation over the default process group."""
from typing import Optional

import torch
import torch.distributed as dist
from torch import nn

from .roles import TRAINER_RANK
from .rollout import weight_device


@torch.no_grad()
def sync_weights(model: nn.Module, version: Optional[int] = None, src: int = TRAINER_RANK) -> int:
    """Broadcast `version` and then every parameter of `model` from `src`, one parameter at a time.

    Collective: every rank calls it with a model of the same architecture. On `src`, `version` is
    the trainer's weight version; elsewhere it is ignored. Returns the version now held."""
    device = weight_device(model) or torch.device("cpu")
    if dist.get_rank() == src:
        if version is None:
            raise ValueError("the source rank must pass the version of the weights it sends")
        header = torch.tensor([version], dtype=torch.int64, device=device)
    else:
        header = torch.zeros(1, dtype=torch.int64, device=device)
    dist.broadcast(header, src)
    for p in model.parameters():
        dist.broadcast(p.data, src)
    return int(header.item())
