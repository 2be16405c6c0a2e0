import torch

from pagedkv import KVCache, ModelConfig, TinyDecoder, generate, init_full_weights

from _dist import run_ranks

CONFIG = ModelConfig()
PROMPTS = [[3, 14, 15, 9, 2, 6, 5], [35, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8], [1, 41]]


def test_contiguous_cache_protocol():
    cache = KVCache(CONFIG, max_seqs=3, max_len=8)
    cache.add_sequence(7)
    for step in range(3):
        positions = cache.append_token([7])
        assert positions.tolist() == [step]
        k = torch.full((1, CONFIG.num_heads, CONFIG.head_dim), float(step))
        cache.write(0, [7], k, -k)
    keys, values = cache.read(0, 7)
    assert keys.shape == (3, CONFIG.num_heads, CONFIG.head_dim)
    assert keys[:, 0, 0].tolist() == [0.0, 1.0, 2.0]
    assert torch.equal(values, -keys)

    cache.fork(7, 8)
    cache.append_token([8])
    cache.write(0, [8], torch.full((1, CONFIG.num_heads, CONFIG.head_dim), 9.0),
                torch.zeros(1, CONFIG.num_heads, CONFIG.head_dim))
    assert cache.seq_len(7) == 3 and cache.seq_len(8) == 4
    assert cache.read(0, 8)[0][:, 0, 0].tolist() == [0.0, 1.0, 2.0, 9.0]
    assert cache.read(0, 7)[0][:, 0, 0].tolist() == [0.0, 1.0, 2.0]

    cache.free(7)
    cache.add_sequence(9)
    assert cache.seq_len(9) == 0


def _single_rank_generation(n, temperature):
    model = TinyDecoder(CONFIG, init_full_weights(CONFIG, seed=1))
    cache = KVCache(CONFIG, max_seqs=len(PROMPTS) * n, max_len=40)
    return generate(model, cache, PROMPTS, max_new_tokens=10, n=n, temperature=temperature, seed=5)


def _tp_generation(rank, world_size):
    model = TinyDecoder(CONFIG, init_full_weights(CONFIG, seed=1))
    out = {}
    for n, temperature in ((1, 0.0), (2, 1.0)):
        cache = KVCache(CONFIG, max_seqs=len(PROMPTS) * n, max_len=40)
        out[(n, temperature)] = generate(model, cache, PROMPTS, max_new_tokens=10, n=n,
                                         temperature=temperature, seed=5)
    return out


def test_tensor_parallel_generation_matches_single_rank():
    results = run_ranks(_tp_generation)
    for key, expected in (((1, 0.0), _single_rank_generation(1, 0.0)),
                          ((2, 1.0), _single_rank_generation(2, 1.0))):
        for rank, result in enumerate(results):
            assert result[key] == expected, f"rank {rank} diverges from one rank for n, T = {key}"
