"""Rollout workers sample actions with whatever weights they last received."""
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn


@dataclass
class Trajectory:
    obs: torch.Tensor
    actions: torch.Tensor
    logp: torch.Tensor
    weight_version: int


class RolloutWorker:
    """Acts with a local copy of the policy. `weight_version` is the trainer version of the weights
    this worker holds (-1 until the first sync); the trainer uses it to spot off-policy data."""

    def __init__(self, model: nn.Module, seed: int = 0):
        self.model = model
        self.weight_version = -1
        self._gen = torch.Generator().manual_seed(seed)

    @torch.no_grad()
    def act(self, obs: torch.Tensor, greedy: bool = False) -> Trajectory:
        logits = self.model(obs)
        if greedy:
            actions = logits.argmax(dim=-1)
        else:
            probs = torch.softmax(logits, dim=-1).cpu()
            actions = torch.multinomial(probs, 1, generator=self._gen).squeeze(-1).to(logits.device)
        logp = torch.log_softmax(logits, dim=-1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        return Trajectory(obs=obs, actions=actions, logp=logp, weight_version=self.weight_version)

    def report(self) -> dict:
        return {"weight_version": self.weight_version}


def weight_device(model: nn.Module) -> Optional[torch.device]:
    for p in model.parameters():
        return p.device
    return None
