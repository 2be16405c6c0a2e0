"""Batched sampling with parallel samples per prompt (n > 1 forks each prompt's sequence)."""
from typing import List

import torch

from .model import TinyDecoder


def _sample(logits: torch.Tensor, temperature: float, gen: torch.Generator) -> torch.Tensor:
    if temperature == 0.0:
        return logits.argmax(dim=-1).cpu()
    # Sampling on the CPU with one seeded generator keeps every tensor-parallel rank (whose logits
    # are identical after the all_reduce) choosing the same tokens.
    probs = torch.softmax(logits.float().cpu() / temperature, dim=-1)
    return torch.multinomial(probs, 1, generator=gen).squeeze(1)


@torch.no_grad()
def generate(model: TinyDecoder, cache, prompts: List[List[int]], max_new_tokens: int, n: int = 1,
             temperature: float = 0.0, seed: int = 0) -> List[List[List[int]]]:
    """Return, for each prompt, n lists of generated tokens (prompt excluded).

    Prompts are fed one token per step, all prompts in one batch while they last. After its prompt
    each sequence is forked n - 1 times, so the samples continue from the same history. Every
    sequence is freed before returning.
    """
    if n < 1 or any(len(p) == 0 for p in prompts):
        raise ValueError("n must be >= 1 and prompts must be non-empty")
    gen = torch.Generator().manual_seed(seed)
    for i in range(len(prompts)):
        cache.add_sequence(i * n)
    last_logits = {}
    for step in range(max(len(p) for p in prompts)):
        seq_ids = [i * n for i, p in enumerate(prompts) if step < len(p)]
        tokens = torch.tensor([prompts[s // n][step] for s in seq_ids], dtype=torch.long)
        logits = model.decode_step(tokens, seq_ids, cache)
        for row, seq_id in enumerate(seq_ids):
            last_logits[seq_id] = logits[row]
    for i in range(len(prompts)):
        for j in range(1, n):
            cache.fork(i * n, i * n + j)
            last_logits[i * n + j] = last_logits[i * n]

    seq_ids = list(range(len(prompts) * n))
    out = [[] for _ in seq_ids]
    logits = torch.stack([last_logits[s] for s in seq_ids])
    for step in range(max_new_tokens):
        tokens = _sample(logits, temperature, gen)
        for seq_id, token in zip(seq_ids, tokens.tolist()):
            out[seq_id].append(token)
        if step + 1 < max_new_tokens:
            logits = model.decode_step(tokens, seq_ids, cache)
    for seq_id in seq_ids:
        cache.free(seq_id)
    return [out[i * n:(i + 1) * n] for i in range(len(prompts))]
