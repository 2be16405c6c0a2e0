"""Structure of the new API and the block bookkeeping: sharing, copy-on-write, freeing, exhaustion.

One process, no process group: the submission runs as a single tensor-parallel rank.
"""
import importlib

import torch

from probegate_probe import ProbeFailure, check, locate, require_signature

BLOCK_MANAGER_METHODS = {
    "__init__": ["num_blocks", "block_size"],
    "allocate": ["seq_id", "num_tokens"],
    "append_slot": ["seq_id"],
    "fork": ["parent_id", "child_id"],
    "free": ["seq_id"],
    "get_block_table": ["seq_id"],
    "get_seq_len": ["seq_id"],
    "get_num_free_blocks": [],
    "get_ref_count": ["block_id"],
}
CACHE_METHODS = {
    "__init__": ["config", "num_blocks", "block_size", "dtype", "device"],
    "add_sequence": ["seq_id"],
    "append_token": ["seq_ids"],
    "write": ["layer", "seq_ids", "k", "v"],
    "read": ["layer", "seq_id"],
    "fork": ["parent_id", "child_id"],
    "free": ["seq_id"],
    "seq_len": ["seq_id"],
}


def api(name):
    module = importlib.import_module("pagedkv")
    value = getattr(module, name, None)
    if value is None:
        raise ProbeFailure(f"`pagedkv` does not export {name}; the issue asks for "
                           f"`from pagedkv import {name}`", location=locate(module))
    return value


def expect(condition, message, where, **measured):
    if not condition:
        raise ProbeFailure(message, location=locate(where), measured=measured or None)


def check_structure():
    with check("block-manager-interface", "structure") as c:
        manager_cls = api("BlockManager")
        c.location = locate(manager_cls)
        for method, params in BLOCK_MANAGER_METHODS.items():
            require_signature(manager_cls, method, params)
        error_cls = api("NoFreeBlocksError")
        expect(isinstance(error_cls, type) and issubclass(error_cls, RuntimeError),
               "NoFreeBlocksError must be a RuntimeError subclass", error_cls)

    with check("paged-cache-interface", "structure") as c:
        cache_cls = api("PagedKVCache")
        c.location = locate(cache_cls)
        for method, params in CACHE_METHODS.items():
            require_signature(cache_cls, method, params)
        config = api("ModelConfig")(num_heads=4, head_dim=8, num_layers=1)
        cache = cache_cls(config, 4, 2)
        manager = getattr(cache, "block_manager", None)
        expect(isinstance(manager, api("BlockManager")),
               f"PagedKVCache.block_manager must be the cache's BlockManager, got {type(manager).__name__}",
               cache_cls)
        expect(manager.get_num_free_blocks() == 4,
               f"PagedKVCache(config, num_blocks=4, block_size=2).block_manager has "
               f"{manager.get_num_free_blocks()} free blocks, expected 4", cache_cls)


def check_fork_and_cow():
    with check("fork-shares-blocks", "state") as c:
        manager_cls = api("BlockManager")
        c.location = locate(manager_cls.fork)
        m = manager_cls(64, 16)
        parent = m.allocate(0, 60)
        expect(len(parent) == 4, f"allocate(0, 60) with block_size 16 gave {len(parent)} blocks, expected 4",
               manager_cls.allocate)
        m.fork(0, 1)
        m.fork(0, 2)
        m.fork(1, 3)
        c.measured.update(free_blocks=m.get_num_free_blocks(), expected_free_blocks=60)
        for child in (1, 2, 3):
            table = m.get_block_table(child)
            expect(table == parent, f"after fork the child's block table is {table}, expected the parent's "
                   f"{parent}: a fork must share the parent's blocks", manager_cls.fork)
            expect(m.get_seq_len(child) == 60, f"forked sequence has length {m.get_seq_len(child)}, expected 60",
                   manager_cls.fork)
        counts = [m.get_ref_count(b) for b in parent]
        c.measured.update(ref_count=max(counts))
        expect(counts == [4] * 4, f"4 sequences share blocks {parent} but their ref counts are {counts}",
               manager_cls.fork)
        expect(m.get_num_free_blocks() == 60, f"{64 - m.get_num_free_blocks()} blocks in use after 3 forks "
               f"of a 4-block sequence, expected 4 (forks take no blocks)", manager_cls.fork)

    with check("copy-on-write-append", "state") as c:
        manager_cls = api("BlockManager")
        c.location = locate(manager_cls.append_slot)
        m = manager_cls(64, 16)
        parent = m.allocate(0, 60)
        m.fork(0, 1)
        m.fork(0, 2)
        slot, copy = m.append_slot(1)
        child = m.get_block_table(1)
        expect(copy is not None and tuple(copy) == (parent[3], child[3]) and child[3] not in parent,
               f"appending to a sequence whose partly filled last block {parent[3]} is shared returned "
               f"copy={copy} and table {child}; expected a private block and copy=({parent[3]}, <new block>)",
               manager_cls.append_slot)
        expect(child[:3] == parent[:3], "copy-on-write must replace only the last block; the full blocks "
               f"stay shared, got {child} for parent {parent}", manager_cls.append_slot)
        expect(slot == child[3] * 16 + 12, f"slot {slot} returned, expected {child[3] * 16 + 12} "
               "(offset 12 of the new private block)", manager_cls.append_slot)
        expect(m.get_block_table(0) == parent and m.get_block_table(2) == parent,
               "copy-on-write in one sequence changed another sequence's block table", manager_cls.append_slot)
        counts = (m.get_ref_count(parent[3]), m.get_ref_count(child[3]), m.get_ref_count(parent[0]))
        c.measured.update(old_block_refs=counts[0], new_block_refs=counts[1])
        expect(counts == (2, 1, 3), f"ref counts after copy-on-write (old last block, new block, shared "
               f"first block) are {counts}, expected (2, 1, 3)", manager_cls.append_slot)
        m.append_slot(2)
        _, copy = m.append_slot(0)
        expect(copy is None and m.get_block_table(0) == parent,
               "the last sequence holding a block wrote through copy-on-write although nobody else "
               f"references it any more (copy={copy})", manager_cls.append_slot)
        m2 = manager_cls(8, 4)
        full = m2.allocate(0, 8)
        m2.fork(0, 1)
        slot, copy = m2.append_slot(1)
        table = m2.get_block_table(1)
        expect(copy is None and table[:2] == full and len(table) == 3 and m2.get_ref_count(full[1]) == 2,
               f"appending after a shared full block must take a new block and keep sharing the full ones; "
               f"got copy={copy}, table {table} (parent {full})", manager_cls.append_slot)


def check_free():
    with check("free-returns-shared-blocks", "state") as c:
        manager_cls = api("BlockManager")
        c.location = locate(manager_cls.free)
        m = manager_cls(32, 4)
        prompt = m.allocate(0, 10)
        for child in (1, 2, 3):
            m.fork(0, child)
        for seq in (1, 2):
            for _ in range(3):
                m.append_slot(seq)
        m.free(0)
        counts = [m.get_ref_count(b) for b in prompt[:2]]
        c.measured.update(shared_block_refs_after_one_free=max(counts), expected_refs=3)
        expect(counts == [3, 3], f"after freeing one of 4 sequences sharing blocks {prompt[:2]} their ref "
               f"counts are {counts}, expected [3, 3]: free must drop the sequence's reference to every "
               "block it holds, shared or not, or shared blocks leak", manager_cls.free)
        for seq in (3, 1, 2):
            m.free(seq)
        leaked = [b for b in range(32) if m.get_ref_count(b) != 0]
        c.measured.update(free_blocks=m.get_num_free_blocks(), num_blocks=32, leaked_blocks=len(leaked))
        expect(m.get_num_free_blocks() == 32 and not leaked,
               f"after every sequence is freed {32 - m.get_num_free_blocks()} of 32 blocks are still in "
               f"use (blocks with a non-zero ref count: {leaked[:8]}); blocks shared by forked sequences "
               "are never returned to the pool", manager_cls.free)
        m.allocate(9, 32 * 4)
        expect(m.get_num_free_blocks() == 0, "the whole pool could not be reused after freeing", manager_cls.free)

    with check("exhaustion-leaves-state-unchanged", "state") as c:
        manager_cls = api("BlockManager")
        c.location = locate(manager_cls)
        error_cls = api("NoFreeBlocksError")
        m = manager_cls(4, 4)
        m.allocate(0, 14)

        def must_raise(call, what):
            free_before, len_before = m.get_num_free_blocks(), m.get_seq_len(0)
            try:
                call()
            except error_cls:
                pass
            else:
                raise ProbeFailure(f"{what} succeeded without enough free blocks; expected NoFreeBlocksError",
                                   location=locate(manager_cls))
            expect(m.get_num_free_blocks() == free_before and m.get_seq_len(0) == len_before,
                   f"{what} raised but changed the manager (free blocks {free_before} -> "
                   f"{m.get_num_free_blocks()}, length of sequence 0 {len_before} -> {m.get_seq_len(0)})",
                   manager_cls)

        must_raise(lambda: m.allocate(1, 9), "allocate(1, 9) with 0 free blocks")
        m.append_slot(0)
        m.append_slot(0)
        must_raise(lambda: m.append_slot(0), "append_slot(0) past the last free block")
        c.measured.update(num_blocks=4, seq_len=m.get_seq_len(0))


def check_cow_data():
    with check("fork-write-isolation", "state") as c:
        cache_cls = api("PagedKVCache")
        c.location = locate(cache_cls)
        config = api("ModelConfig")(num_heads=2, head_dim=4, num_layers=2)
        cache = cache_cls(config, 16, 8)
        gen = torch.Generator().manual_seed(7)
        history = {0: [[], []]}

        def feed(seq_ids):
            cache.append_token(seq_ids)
            for layer in range(config.num_layers):
                k = torch.randn(len(seq_ids), 2, 4, generator=gen)
                v = torch.randn(len(seq_ids), 2, 4, generator=gen)
                cache.write(layer, seq_ids, k, v)
                for i, s in enumerate(seq_ids):
                    history[s][layer].append((k[i], v[i]))

        def verify(when):
            for s, layers in history.items():
                for layer, items in enumerate(layers):
                    keys, values = cache.read(layer, s)
                    want_k = torch.stack([k for k, _ in items])
                    want_v = torch.stack([v for _, v in items])
                    if not (torch.equal(keys, want_k) and torch.equal(values, want_v)):
                        raise ProbeFailure(
                            f"{when}: sequence {s}, layer {layer} reads back keys/values that differ from "
                            f"what was written to it ({len(items)} tokens); writes to one sequence leak "
                            "into another that shares its blocks", location=locate(cache_cls.write))

        cache.add_sequence(0)
        for _ in range(13):
            feed([0])
        for child in (1, 2):
            cache.fork(0, child)
            history[child] = [list(h) for h in history[0]]
        feed([1])
        feed([2, 0])
        feed([0, 1, 2])
        verify("after forking a 13-token sequence twice and appending different tokens")
        cache.free(0)
        del history[0]
        for _ in range(5):
            feed([1, 2])
        verify("after freeing the parent and appending to both children")
        c.measured.update(sequences=3, tokens_checked=sum(len(h[0]) for h in history.values()))


if __name__ == "__main__":
    check_structure()
    check_fork_and_cow()
    check_free()
    check_cow_data()
