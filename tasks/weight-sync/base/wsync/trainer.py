"""The trainer: REINFORCE updates on the policy, counting weight versions."""
import torch
from torch import nn


class Trainer:
    """Owns the authoritative policy. `version` counts optimizer steps: weights produced by step k
    carry version k, and rollout workers tag their trajectories with the version they acted with."""

    def __init__(self, model: nn.Module, lr: float = 1e-2):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        self.version = 0

    def step(self, obs: torch.Tensor, actions: torch.Tensor, advantages: torch.Tensor) -> float:
        logp = self.model.log_prob(obs, actions)
        loss = -(logp * advantages.to(logp.dtype)).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.version += 1
        return float(loss.detach())
