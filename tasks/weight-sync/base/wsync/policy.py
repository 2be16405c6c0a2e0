"""A categorical MLP policy: observations in, action logits out."""
from typing import Optional

import torch
from torch import nn


class PolicyNet(nn.Module):
    """MLP policy. `head_dtype` lets the output head live in a different precision than the trunk,
    the way RL stacks keep a small fp32 head on a half-precision body (or the reverse)."""

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        hidden: int = 64,
        n_layers: int = 2,
        dtype: torch.dtype = torch.float32,
        head_dtype: Optional[torch.dtype] = None,
        device: Optional[torch.device] = None,
    ):
        super().__init__()
        if n_layers < 1:
            raise ValueError("n_layers must be >= 1")
        dims = [obs_dim] + [hidden] * n_layers
        self.trunk = nn.ModuleList(
            nn.Linear(dims[i], dims[i + 1], device=device, dtype=dtype) for i in range(n_layers)
        )
        self.head = nn.Linear(hidden, n_actions, device=device, dtype=head_dtype or dtype)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        x = obs.to(self.trunk[0].weight.dtype)
        for layer in self.trunk:
            x = torch.tanh(layer(x))
        # Logits always come out fp32 so sampling and log-probs do not depend on the trunk precision.
        return self.head(x.to(self.head.weight.dtype)).float()

    def log_prob(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        logp = torch.log_softmax(self(obs), dim=-1)
        return logp.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
