import pagedkv
from pagedkv import KVCache, ModelConfig, TinyDecoder, generate, init_full_weights

from _dist import run_ranks

CONFIG = ModelConfig()
PROMPTS = [[3, 14, 15, 9, 2, 6, 5], [35, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8], [1, 41]]


def test_block_manager_allocate_append_free():
    manager = pagedkv.BlockManager(num_blocks=6, block_size=4)
    assert manager.get_num_free_blocks() == 6
    table = manager.allocate(0, 6)
    assert len(table) == 2 and manager.get_block_table(0) == table
    assert manager.get_seq_len(0) == 6 and manager.get_num_free_blocks() == 4

    slot, copy = manager.append_slot(0)
    assert copy is None and slot == table[1] * 4 + 2
    manager.append_slot(0)
    slot, _ = manager.append_slot(0)
    new_table = manager.get_block_table(0)
    assert len(new_table) == 3 and slot == new_table[2] * 4
    assert manager.get_num_free_blocks() == 3

    manager.free(0)
    assert manager.get_num_free_blocks() == 6


def test_block_manager_fork_copy_on_write():
    manager = pagedkv.BlockManager(num_blocks=8, block_size=4)
    manager.allocate(1, 5)
    manager.fork(1, 2)
    assert manager.get_block_table(2) == manager.get_block_table(1)
    assert manager.get_seq_len(2) == 5

    slot, copy = manager.append_slot(2)
    parent, child = manager.get_block_table(1), manager.get_block_table(2)
    assert copy == (parent[1], child[1])
    assert child[0] == parent[0] and child[1] != parent[1]
    assert slot == child[1] * 4 + 1


def _paged_vs_contiguous(rank, world_size):
    model = TinyDecoder(CONFIG, init_full_weights(CONFIG, seed=3))
    out = []
    for n, temperature in ((1, 0.0), (3, 1.0)):
        contiguous = KVCache(CONFIG, max_seqs=len(PROMPTS) * n, max_len=40)
        paged = pagedkv.PagedKVCache(CONFIG, num_blocks=64, block_size=8)
        runs = [generate(model, cache, PROMPTS, max_new_tokens=12, n=n, temperature=temperature, seed=11)
                for cache in (contiguous, paged)]
        out.append(runs)
    return out


def test_paged_generation_matches_contiguous():
    for rank, result in enumerate(run_ranks(_paged_vs_contiguous)):
        for contiguous, paged in result:
            assert paged == contiguous, f"rank {rank}: paged cache changes generated tokens"
