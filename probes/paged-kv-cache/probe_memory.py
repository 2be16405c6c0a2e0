"""KV memory per tensor-parallel rank, and the blocks that forked samples of one prompt occupy,
at drawn sizes.
# PROBEGATE-CANARY-PAGEDKV-MEMORY-c3e95a
"""
import torch

from probegate_probe import (ProbeFailure, RankError, backend, check, device_for_rank, locate, memory_record, param,
                             peak_memory_caveat, run_ranks, world_size)

from _pkv_probe import ceil_div

MiB = 1 << 20
HEADS_PER_RANK = param("heads_per_rank", 2) + 1            # 2..4 heads per rank
HEAD_DIM = 32 + 2 * param("head_dim", 16)                  # 40..80: big enough to measure
LAYERS = param("num_layers", 2)
BLOCK_SIZE = param("block_size", 16)
NUM_BLOCKS = param("kv_slots", 8192) // BLOCK_SIZE
FILL_SEQS = 32                                             # FILL_SEQS sequences of this length use every block
FILL_LEN = (NUM_BLOCKS // FILL_SEQS) * BLOCK_SIZE
PROMPT, SAMPLES, NEW_TOKENS = param("prompt_len", 200), param("samples", 6), param("new_tokens", 10)
HEADS = HEADS_PER_RANK * world_size()


SHARED_POOL = ceil_div(PROMPT, BLOCK_SIZE) + SAMPLES * ceil_div(PROMPT % BLOCK_SIZE + NEW_TOKENS, BLOCK_SIZE) + 4


def kv_bytes(num_blocks, size):
    """Keys and values of every layer for this rank's heads only."""
    return 2 * LAYERS * num_blocks * BLOCK_SIZE * (HEADS // size) * HEAD_DIM * 4


def storage_bytes(root):
    """Bytes of the distinct tensor storages reachable from root's attributes and containers."""
    seen_objects, storages, todo = set(), {}, [(root, 0)]
    while todo:
        obj, depth = todo.pop()
        if id(obj) in seen_objects or depth > 6:
            continue
        seen_objects.add(id(obj))
        if isinstance(obj, torch.Tensor):
            storage = obj.untyped_storage() if hasattr(obj, "untyped_storage") else obj.storage()
            storages[(obj.device.type, storage.data_ptr())] = storage.nbytes()
        elif isinstance(obj, dict):
            todo.extend((v, depth + 1) for v in obj.values())
        elif isinstance(obj, (list, tuple, set)):
            todo.extend((v, depth + 1) for v in obj)
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            todo.extend((v, depth + 1) for v in vars(obj).values())
    return sum(storages.values())


def fill(cache, seq_ids, steps, local_heads, device):
    for step in range(steps):
        cache.append_token(seq_ids)
        k = torch.full((len(seq_ids), local_heads, HEAD_DIM), float(step % 7), device=device)
        for layer in range(LAYERS):
            cache.write(layer, seq_ids, k, k)


LIFECYCLES = 2000   # sequences added, decoded and freed while the Python heap is traced
LEFT_PER_SEQUENCE = 16  # bytes of heap a freed sequence may leave (the reference leaves none)


def freed_sequence_bytes(pagedkv):
    """Python heap (tracemalloc) still held after LIFECYCLES sequences were added, decoded and freed."""
    import gc
    import tracemalloc

    config = pagedkv.ModelConfig(num_heads=2, head_dim=4, num_layers=1)
    cache = pagedkv.PagedKVCache(config, 8, BLOCK_SIZE, device=torch.device("cpu"))
    kv = torch.zeros(1, 2, 4)

    def lifecycle(seq_id):
        cache.add_sequence(seq_id)
        for _ in range(2):
            cache.append_token([seq_id])
            cache.write(0, [seq_id], kv, kv)
        cache.read(0, seq_id)
        cache.free(seq_id)

    for seq_id in range(200):  # first-use allocations and dict capacity stay out of the figure
        lifecycle(seq_id)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for seq_id in range(200, 200 + LIFECYCLES):  # new ids, as a server's requests have
            lifecycle(seq_id)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def memory_rank(rank, size):
    import pagedkv

    if not hasattr(pagedkv, "PagedKVCache"):
        raise ProbeFailure("`pagedkv` does not export PagedKVCache", location=locate(pagedkv))
    device = device_for_rank(rank)
    config = pagedkv.ModelConfig(num_heads=HEADS, head_dim=HEAD_DIM, num_layers=LAYERS)
    local_heads = HEADS // size

    def build_and_fill(num_blocks, seqs, steps):
        cache = pagedkv.PagedKVCache(config, num_blocks, BLOCK_SIZE, device=device)
        for s in seqs:
            cache.add_sequence(s)
        fill(cache, seqs, steps, local_heads, device)
        return cache

    build_and_fill(4, [0], 2 * BLOCK_SIZE)  # first-use allocations of torch itself stay out of the figure
    # The memory of record is the process's own beside the allocator's (issue 29): on CUDA the larger of
    # the allocator's peak and the driver's growth, on CPU the larger of the resident growth and the
    # anonymous memory the fill touched, so a cache kept in scratch held since import still counts.
    rec = memory_record(build_and_fill, NUM_BLOCKS, list(range(FILL_SEQS)), FILL_LEN, device=device)
    cache, peak = rec.result, rec.peak_bytes
    held = storage_bytes(cache)
    del cache

    shared = pagedkv.PagedKVCache(config, SHARED_POOL, BLOCK_SIZE, device=device)
    shared.add_sequence(0)
    fill(shared, [0], PROMPT, local_heads, device)
    for child in range(1, SAMPLES):
        shared.fork(0, child)
    after_fork = SHARED_POOL - shared.block_manager.get_num_free_blocks()
    fill(shared, list(range(SAMPLES)), NEW_TOKENS, local_heads, device)
    after_decode = SHARED_POOL - shared.block_manager.get_num_free_blocks()
    return {"peak": peak, "record": rec.measured(), "held": held, "caveat": peak_memory_caveat(), "after_fork": after_fork,
            "after_decode": after_decode}


def main():
    size = world_size()
    try:
        results, failure = run_ranks(memory_rank, world_size=size, timeout=240), None
    except RankError as exc:
        results, failure = None, exc
    try:
        import pagedkv
    except Exception:  # the ranks report the import error itself
        pagedkv = None
    cache_cls = getattr(pagedkv, "PagedKVCache", None)

    with check("kv-bytes-per-rank", "memory", location=locate(getattr(cache_cls, "__init__", None)),
               requirements=["cache-local-heads", "cache-kv-in-blocks"]) as c:
        if failure is not None:
            raise failure
        expected = kv_bytes(NUM_BLOCKS, size)
        limit = int(expected * 1.10) + 2 * MiB
        # The CUDA allocator's peak is exact; CPU peak RSS also holds allocator and first-use noise
        # (up to ~3 MiB seen on torch 2.11), so it gets more slack. Either way the bytes of the
        # tensors the cache holds must fit the tight limit.
        peak_limit = limit if backend() == "nccl" else limit + 6 * MiB
        for rank, r in enumerate(results):
            measured = max(r["peak"], r["held"])
            c.measured.update(kv_bytes=measured, peak_bytes=r["peak"], tensor_bytes=r["held"],
                              expected_bytes=expected, limit_bytes=limit, peak_limit_bytes=peak_limit,
                              all_heads_bytes=kv_bytes(NUM_BLOCKS, 1))
            c.measured.update({k: v for k, v in r["record"].items() if k != "peak_bytes"})
            if r["held"] > limit or r["peak"] > peak_limit:
                raise ProbeFailure(
                    f"rank {rank} of {size}: a PagedKVCache of {NUM_BLOCKS} blocks × {BLOCK_SIZE} tokens "
                    f"({HEADS} heads, head_dim {HEAD_DIM}, {LAYERS} layers, fp32) takes {measured / MiB:.1f} MiB, "
                    f"expected {expected / MiB:.1f} MiB for this rank's {HEADS // size} heads (limits "
                    f"{limit / MiB:.1f} MiB of tensors, {peak_limit / MiB:.1f} MiB peak; all {HEADS} heads "
                    f"would be {kv_bytes(NUM_BLOCKS, 1) / MiB:.1f} MiB): each rank's blocks must hold only "
                    "its own heads")
        if results[0]["caveat"]:
            c.message = f"peak is a lower bound here: {results[0]['caveat']}"

    with check("forked-samples-share-prompt-blocks", "memory", location=locate(getattr(cache_cls, "fork", None)),
               requirements=["cache-fork-shares", "bm-copy-on-write", "bm-append-slot"]) as c:
        if failure is not None:
            raise failure
        prompt_blocks = ceil_div(PROMPT, BLOCK_SIZE)
        full_prompt_blocks = PROMPT // BLOCK_SIZE
        # Every sample keeps sharing the full prompt blocks and privately owns the blocks from
        # the partly filled one on.
        tail_blocks = ceil_div(PROMPT % BLOCK_SIZE + NEW_TOKENS, BLOCK_SIZE)
        want_decode = full_prompt_blocks + SAMPLES * tail_blocks
        block_bytes = kv_bytes(1, size)
        for rank, r in enumerate(results):
            c.measured.update(blocks_after_fork=r["after_fork"], expected_blocks_after_fork=prompt_blocks,
                              blocks_after_decode=r["after_decode"], expected_blocks_after_decode=want_decode,
                              kv_bytes_after_decode=r["after_decode"] * block_bytes)
            if r["after_fork"] > prompt_blocks or r["after_decode"] > want_decode:
                raise ProbeFailure(
                    f"rank {rank}: {SAMPLES} samples of one {PROMPT}-token prompt occupy {r['after_fork']} blocks "
                    f"right after forking (expected {prompt_blocks}) and {r['after_decode']} blocks "
                    f"({r['after_decode'] * block_bytes / MiB:.2f} MiB) after {NEW_TOKENS} more tokens each "
                    f"(expected {want_decode}, {want_decode * block_bytes / MiB:.2f} MiB): forked samples must "
                    "share the prompt's blocks instead of copying them")


    with check("freed-sequences-leave-nothing", "memory", location=locate(getattr(cache_cls, "free", None)),
               requirements=["bm-free", "cache-protocol"]) as c:
        if cache_cls is None:
            raise ProbeFailure("`pagedkv` does not export PagedKVCache", location=locate(pagedkv))
        left = freed_sequence_bytes(pagedkv)
        c.measured.update(sequences=LIFECYCLES, bytes_left=left, limit_bytes=LIFECYCLES * LEFT_PER_SEQUENCE)
        if left > LIFECYCLES * LEFT_PER_SEQUENCE:
            raise ProbeFailure(
                f"after {LIFECYCLES} sequences were added, decoded and freed, the cache still holds {left} bytes "
                f"of Python heap ({left / LIFECYCLES:.0f} per freed sequence): free(seq_id) must forget the "
                "sequence, so a server that keeps serving new requests does not grow")


if __name__ == "__main__":
    main()
