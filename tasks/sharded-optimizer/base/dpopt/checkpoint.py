"""Checkpoints: one file per rank, so an optimizer whose state differs per rank fits as well."""
import os

import torch
import torch.distributed as dist


def _rank_file(directory, group=None):
    return os.path.join(directory, f"rank{dist.get_rank(group)}.pt")


def save_checkpoint(directory, model, optimizer, step, group=None):
    """Write this rank's model and optimizer state under ``directory``; every rank must call it."""
    os.makedirs(directory, exist_ok=True)
    torch.save(
        {"step": int(step), "model": model.state_dict(), "optimizer": optimizer.state_dict()},
        _rank_file(directory, group),
    )
    dist.barrier(group=group)


def load_checkpoint(directory, model, optimizer, group=None):
    """Restore what save_checkpoint wrote for this rank; returns the saved training step."""
    device = next(model.parameters()).device
    state = torch.load(_rank_file(directory, group), map_location=device)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["step"]
