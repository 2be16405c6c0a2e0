"""Contiguous KV cache: one [max_seqs, max_len, local_heads, head_dim] buffer per layer for keys and
one for values. A sequence owns a whole row for its lifetime, however short it is.

Cache protocol used by the model (any cache passed to TinyDecoder.decode_step implements it):
    add_sequence(seq_id)            register an empty sequence
    append_token(seq_ids) -> Tensor reserve the next position of each sequence; returns positions
    write(layer, seq_ids, k, v)     store k/v [batch, local_heads, head_dim] at the reserved positions
    read(layer, seq_id) -> (k, v)   the sequence's whole history, [seq_len, local_heads, head_dim]
    fork(parent_id, child_id)       the child continues from the parent's history
    free(seq_id)                    forget a sequence
    seq_len(seq_id) -> int
"""
from typing import Dict, List, Optional, Tuple

import torch

from .model import ModelConfig
from .parallel import default_device, local_head_range


class KVCache:
    def __init__(self, config: ModelConfig, max_seqs: int, max_len: int,
                 dtype: torch.dtype = torch.float32, device: Optional[torch.device] = None):
        start, stop = local_head_range(config.num_heads)
        self.num_local_heads = stop - start
        self.head_dim = config.head_dim
        self.max_len = max_len
        self.device = device if device is not None else default_device()
        shape = (max_seqs, max_len, self.num_local_heads, config.head_dim)
        self.k = [torch.zeros(shape, dtype=dtype, device=self.device) for _ in range(config.num_layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=self.device) for _ in range(config.num_layers)]
        self._free_rows = list(range(max_seqs - 1, -1, -1))
        self._rows: Dict[int, int] = {}
        self._lens: Dict[int, int] = {}

    def add_sequence(self, seq_id: int) -> None:
        if seq_id in self._rows:
            raise KeyError(f"sequence {seq_id} already exists")
        if not self._free_rows:
            raise RuntimeError("KV cache is full: no free sequence rows")
        self._rows[seq_id] = self._free_rows.pop()
        self._lens[seq_id] = 0

    def append_token(self, seq_ids: List[int]) -> torch.Tensor:
        for seq_id in seq_ids:
            if self._lens[seq_id] >= self.max_len:
                raise RuntimeError(f"sequence {seq_id} exceeds max_len={self.max_len}")
        for seq_id in seq_ids:
            self._lens[seq_id] += 1
        return torch.tensor([self._lens[s] - 1 for s in seq_ids], dtype=torch.long, device=self.device)

    def _last_positions(self, seq_ids: List[int]) -> Tuple[torch.Tensor, torch.Tensor]:
        rows = torch.tensor([self._rows[s] for s in seq_ids], dtype=torch.long, device=self.device)
        cols = torch.tensor([self._lens[s] - 1 for s in seq_ids], dtype=torch.long, device=self.device)
        return rows, cols

    def write(self, layer: int, seq_ids: List[int], k: torch.Tensor, v: torch.Tensor) -> None:
        rows, cols = self._last_positions(seq_ids)
        self.k[layer][rows, cols] = k
        self.v[layer][rows, cols] = v

    def read(self, layer: int, seq_id: int) -> Tuple[torch.Tensor, torch.Tensor]:
        row, length = self._rows[seq_id], self._lens[seq_id]
        return self.k[layer][row, :length], self.v[layer][row, :length]

    def fork(self, parent_id: int, child_id: int) -> None:
        self.add_sequence(child_id)
        src, dst, length = self._rows[parent_id], self._rows[child_id], self._lens[parent_id]
        for buf in self.k + self.v:
            buf[dst, :length] = buf[src, :length]
        self._lens[child_id] = length

    def free(self, seq_id: int) -> None:
        self._free_rows.append(self._rows.pop(seq_id))
        del self._lens[seq_id]

    def seq_len(self, seq_id: int) -> int:
        return self._lens[seq_id]
