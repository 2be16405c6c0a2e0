"""A tiny decoder whose attention is split over tensor-parallel ranks by heads.

Each rank holds the query/key/value projections of its own heads (column shards) and the matching
rows of the output projection; the partial outputs are summed with one all_reduce per layer.
Embeddings and the LM head are replicated.
"""
import math
from dataclasses import dataclass
from typing import Dict, List, Optional

import torch

from .parallel import all_reduce_sum, default_device, local_head_range


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 64
    hidden_size: int = 64
    num_heads: int = 4
    head_dim: int = 16
    num_layers: int = 2
    max_position: int = 512


def init_full_weights(config: ModelConfig, seed: int = 0) -> Dict[str, torch.Tensor]:
    """Unsharded fp32 weights, identical on every rank for a given seed."""
    gen = torch.Generator().manual_seed(seed)
    inner = config.num_heads * config.head_dim

    def normal(*shape: int, fan_in: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen) / math.sqrt(fan_in)

    weights = {
        "embed": normal(config.vocab_size, config.hidden_size, fan_in=1),
        "pos": normal(config.max_position, config.hidden_size, fan_in=4),
        "lm_head": normal(config.hidden_size, config.vocab_size, fan_in=config.hidden_size),
    }
    for i in range(config.num_layers):
        for name in ("wq", "wk", "wv"):
            weights[f"layers.{i}.{name}"] = normal(config.hidden_size, inner, fan_in=config.hidden_size)
        weights[f"layers.{i}.wo"] = normal(inner, config.hidden_size, fan_in=inner)
    return weights


class TPAttention:
    """Decode-time attention over this rank's heads, reading history from a KV cache."""

    def __init__(self, config: ModelConfig, layer_idx: int, weights: Dict[str, torch.Tensor],
                 device: torch.device):
        start, stop = local_head_range(config.num_heads)
        cols = slice(start * config.head_dim, stop * config.head_dim)
        prefix = f"layers.{layer_idx}."
        self.layer_idx = layer_idx
        self.num_local_heads = stop - start
        self.head_dim = config.head_dim
        self.scale = 1.0 / math.sqrt(config.head_dim)
        self.wq = weights[prefix + "wq"][:, cols].contiguous().to(device)
        self.wk = weights[prefix + "wk"][:, cols].contiguous().to(device)
        self.wv = weights[prefix + "wv"][:, cols].contiguous().to(device)
        self.wo = weights[prefix + "wo"][cols, :].contiguous().to(device)

    def __call__(self, x: torch.Tensor, seq_ids: List[int], cache) -> torch.Tensor:
        batch = x.shape[0]
        shape = (batch, self.num_local_heads, self.head_dim)
        q = (x @ self.wq).view(shape)
        cache.write(self.layer_idx, seq_ids, (x @ self.wk).view(shape), (x @ self.wv).view(shape))
        outs = []
        for i, seq_id in enumerate(seq_ids):
            keys, values = cache.read(self.layer_idx, seq_id)
            scores = torch.einsum("hd,thd->ht", q[i], keys) * self.scale
            outs.append(torch.einsum("ht,thd->hd", scores.softmax(dim=-1), values))
        partial = torch.stack(outs).reshape(batch, -1) @ self.wo
        return all_reduce_sum(partial)


class TinyDecoder:
    """Embedding, `num_layers` residual attention layers, LM head; one token per sequence per step."""

    def __init__(self, config: ModelConfig, weights: Dict[str, torch.Tensor],
                 device: Optional[torch.device] = None):
        self.config = config
        self.device = device if device is not None else default_device()
        self.embed = weights["embed"].to(self.device)
        self.pos = weights["pos"].to(self.device)
        self.lm_head = weights["lm_head"].to(self.device)
        self.layers = [TPAttention(config, i, weights, self.device) for i in range(config.num_layers)]

    @torch.no_grad()
    def decode_step(self, token_ids: torch.Tensor, seq_ids: List[int], cache) -> torch.Tensor:
        """Feed token_ids[i] as the next token of sequence seq_ids[i]; return next-token logits."""
        if token_ids.shape != (len(seq_ids),):
            raise ValueError("token_ids must hold exactly one token per sequence")
        positions = cache.append_token(seq_ids)
        x = self.embed[token_ids.to(self.device)] + self.pos[positions]
        for layer in self.layers:
            x = x + layer(x, seq_ids, cache)
        return x @ self.lm_head
