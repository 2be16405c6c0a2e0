"""Block state across forks, copy-on-write, frees, exhaustion and id reuse, at drawn sizes.

One process, no process group. The BlockManager checks use only its stated methods; the cache
workload compares every read against what was written, sequence by sequence.
# PROBEGATE-CANARY-PAGEDKV-STATE-a40c97
"""
from probegate_probe import ProbeFailure, check, locate, param

from _pkv_probe import Workload, api, expect

BS = param("block_size", 6)
POOL = param("pool_blocks", 40)
FORKS = param("forks", 2)
BS_COW = BS if BS > 1 else 2   # copy-on-write needs a partly filled block: block size 1 never has one


def partial_length(bs=BS):
    """A token count whose last block is partly filled (when block_size > 1), at least one full block."""
    n = max(bs, min(param("num_tokens", 13), (POOL // 4) * bs))
    if bs > 1 and n % bs == 0:
        n += 1 + n % (bs - 1)
    return n


def check_fork():
    with check("fork-shares-blocks", "state", requirements=["bm-fork", "bm-getters"]) as c:
        manager_cls = api("BlockManager")
        c.location = locate(manager_cls.fork)
        m = manager_cls(POOL, BS)
        n = partial_length()
        parent = m.allocate(0, n)
        free = m.get_num_free_blocks()
        children = list(range(1, FORKS + 2))
        m.fork(0, children[0])
        for i, child in enumerate(children[1:]):
            m.fork(children[i] if i % 2 else 0, child)  # forks of forks, too
        c.measured.update(free_blocks=m.get_num_free_blocks(), expected_free_blocks=free, sequences=len(children) + 1)
        for child in children:
            table = m.get_block_table(child)
            expect(table == parent, f"after fork the child's block table is {table}, expected the parent's "
                   f"{parent}: a fork must share the parent's blocks", manager_cls.fork)
            expect(m.get_seq_len(child) == n, f"forked sequence has length {m.get_seq_len(child)}, expected {n}",
                   manager_cls.fork)
        counts = [m.get_ref_count(b) for b in parent]
        expect(counts == [len(children) + 1] * len(parent), f"{len(children) + 1} sequences share blocks "
               f"{parent} but their ref counts are {counts}", manager_cls.fork)
        expect(m.get_num_free_blocks() == free, f"{free - m.get_num_free_blocks()} blocks taken by "
               f"{len(children)} forks; forks take no blocks", manager_cls.fork)


def check_cow():
    with check("copy-on-write-append", "state", requirements=["bm-copy-on-write", "bm-append-slot"]) as c:
        manager_cls = api("BlockManager")
        c.location = locate(manager_cls.append_slot)
        sharers = FORKS + 1
        c.measured.update(block_size=BS_COW, sequences=sharers)
        m = manager_cls(POOL, BS_COW)
        n = partial_length(BS_COW)
        parent = m.allocate(0, n)
        for child in range(1, sharers):
            m.fork(0, child)
        slot, copy = m.append_slot(1)
        child = m.get_block_table(1)
        expect(copy is not None and tuple(copy) == (parent[-1], child[-1]) and child[-1] not in parent,
               f"appending to a sequence whose partly filled last block {parent[-1]} is shared returned "
               f"copy={copy} and table {child}; expected a private block and copy=({parent[-1]}, <new>)",
               manager_cls.append_slot)
        expect(child[:-1] == parent[:-1], "copy-on-write must replace only the last block; the full blocks "
               f"stay shared, got {child} for parent {parent}", manager_cls.append_slot)
        expect(slot == child[-1] * BS_COW + n % BS_COW, f"slot {slot} returned, expected {child[-1] * BS_COW + n % BS_COW} "
               f"(offset {n % BS_COW} of the new private block)", manager_cls.append_slot)
        others = [s for s in range(sharers) if s != 1]
        expect(all(m.get_block_table(s) == parent for s in others),
               "copy-on-write in one sequence changed another sequence's block table", manager_cls.append_slot)
        counts = (m.get_ref_count(parent[-1]), m.get_ref_count(child[-1]), m.get_ref_count(parent[0]))
        c.measured.update(old_block_refs=counts[0], new_block_refs=counts[1])
        want = (sharers - 1, 1, sharers)
        expect(counts == want, f"ref counts after copy-on-write (old last block, new block, shared first "
               f"block) are {counts}, expected {want}", manager_cls.append_slot)
        for s in range(2, sharers):
            _, copy = m.append_slot(s)
            expect(copy is not None, f"sequence {s} wrote into block {parent[-1]} still shared with the "
                   "parent without copy-on-write", manager_cls.append_slot)
        _, copy = m.append_slot(0)
        expect(copy is None and m.get_block_table(0) == parent,
               "the last sequence holding a block wrote through copy-on-write although nobody else "
               f"references it any more (copy={copy})", manager_cls.append_slot)
        m2 = manager_cls(POOL, BS)
        full = m2.allocate(0, 2 * BS)
        m2.fork(0, 1)
        _, copy = m2.append_slot(1)
        table = m2.get_block_table(1)
        expect(copy is None and table[:2] == full and len(table) == 3 and m2.get_ref_count(full[1]) == 2,
               f"appending after a shared full block must take a new block and keep sharing the full ones; "
               f"got copy={copy}, table {table} (parent {full})", manager_cls.append_slot)


def check_free():
    with check("free-returns-shared-blocks", "state", requirements=["bm-free", "bm-getters"]) as c:
        manager_cls = api("BlockManager")
        c.location = locate(manager_cls.free)
        m = manager_cls(POOL, BS)
        n = partial_length()
        prompt = m.allocate(0, n)
        sharers = max(3, FORKS + 1)
        for child in range(1, sharers):
            m.fork(0, child)
        for seq in (1, 2):
            for _ in range(BS + 1):
                m.append_slot(seq)
        m.free(0)
        shared = prompt[:n // BS]
        counts = [m.get_ref_count(b) for b in shared]
        c.measured.update(shared_block_refs_after_one_free=max(counts), expected_refs=sharers - 1)
        expect(counts == [sharers - 1] * len(shared), f"after freeing one of {sharers} sequences sharing blocks "
               f"{shared} their ref counts are {counts}, expected {sharers - 1} each: free must drop the sequence's "
               "reference to every block it holds, shared or not", manager_cls.free)
        for seq in range(sharers - 1, 0, -1):
            m.free(seq)
        leaked = [b for b in range(POOL) if m.get_ref_count(b) != 0]
        c.measured.update(free_blocks=m.get_num_free_blocks(), num_blocks=POOL, leaked_blocks=len(leaked))
        expect(m.get_num_free_blocks() == POOL and not leaked,
               f"after every sequence is freed {POOL - m.get_num_free_blocks()} of {POOL} blocks are still in "
               f"use (blocks with a non-zero ref count: {leaked[:8]}); blocks shared by forked sequences "
               "are never returned to the pool", manager_cls.free)
        # free forgets the sequence: its id then answers as one never registered, not with the
        # length or table it had (state left behind would also grow with every sequence served).
        unknown = {name: _answer(getattr(m, name), 10_000 + POOL) for name in ("get_seq_len", "get_block_table")}
        for seq in range(sharers):
            for name, want in unknown.items():
                got = _answer(getattr(m, name), seq)
                expect(got[0] == "raised" and want[0] == "raised" or got == want,
                       f"after free({seq}), {name}({seq}) {got[0]} {got[1]}, while for a sequence id never "
                       f"registered it {want[0]} {want[1]}: free must forget the sequence", manager_cls.free)
        m.allocate(99, POOL * BS)
        expect(m.get_num_free_blocks() == 0, "the whole pool could not be reused after freeing", manager_cls.free)


def _answer(getter, seq_id):
    """What a getter does for seq_id: ("returned", its value) or ("raised", the exception's type)."""
    try:
        return "returned", repr(getter(seq_id))
    except Exception as e:
        return "raised", type(e).__name__


def snapshot(m, seqs):
    return ({s: (m.get_block_table(s), m.get_seq_len(s)) for s in seqs}, m.get_num_free_blocks(),
            [m.get_ref_count(b) for b in range(POOL)])


def check_exhaustion():
    with check("exhaustion-leaves-state-unchanged", "state", requirements=["bm-no-free-blocks"]) as c:
        manager_cls = api("BlockManager")
        c.location = locate(manager_cls)
        error_cls = api("NoFreeBlocksError")

        def must_raise(m, seqs, call, what):
            before = snapshot(m, seqs)
            try:
                call()
            except error_cls:
                pass
            else:
                raise ProbeFailure(f"{what} succeeded without enough free blocks; expected NoFreeBlocksError",
                                   location=locate(manager_cls))
            after = snapshot(m, seqs)
            changed_seqs = [s for s in seqs if before[0][s] != after[0][s]]
            changed_refs = {b: f"{before[2][b]}->{after[2][b]}" for b in range(POOL) if before[2][b] != after[2][b]}
            expect(after == before, f"{what} raised but changed the manager (free blocks {before[1]} -> "
                   f"{after[1]}; sequences whose table or length changed: {changed_seqs}; ref counts changed: "
                   f"{dict(list(changed_refs.items())[:8])})", manager_cls)

        m = manager_cls(POOL, BS)
        spare = min(2, BS - 1)
        m.allocate(0, POOL * BS - spare)
        must_raise(m, [0], lambda: m.allocate(1, 1), "allocate(1, 1) with 0 free blocks")
        expect(m.allocate(2, 0) == [], "allocate(2, 0) needs no block but failed on a full pool", manager_cls.allocate)
        m.free(2)
        for _ in range(spare):
            m.append_slot(0)
        must_raise(m, [0], lambda: m.append_slot(0), "append_slot(0) past the last free block")

        m = manager_cls(POOL, BS)
        m.allocate(0, (POOL - 3) * BS)
        must_raise(m, [0], lambda: m.allocate(1, 3 * BS + 1), f"allocate(1, {3 * BS + 1}) with 3 free blocks")
        m = manager_cls(POOL, BS_COW)
        m.allocate(0, (POOL - 1) * BS_COW + 1)
        m.fork(0, 1)
        must_raise(m, [0, 1], lambda: m.append_slot(1),
                   "append_slot(1) needing copy-on-write of a shared block with 0 free blocks")
        m.free(1)
        _, copy = m.append_slot(0)
        expect(copy is None and m.get_num_free_blocks() == 0, "after the failed copy-on-write and freeing "
               f"the child, the parent's append gave copy={copy} with {m.get_num_free_blocks()} free blocks; "
               "the failed call must have left the shared block as it was", manager_cls.append_slot)
        c.measured.update(num_blocks=POOL, block_size=BS)


def check_cache_workload():
    with check("fork-write-isolation", "state",
               requirements=["cache-fork-isolation", "cache-fork-shares", "cache-protocol", "bm-copy-on-write"]) as c:
        cache_cls = api("PagedKVCache")
        c.location = locate(cache_cls)
        config = api("ModelConfig")(num_heads=param("heads_per_rank", 2), head_dim=param("head_dim", 8),
                                    num_layers=param("num_layers", 2))
        w = Workload(cache_cls, config, POOL, BS)
        root = w.add()
        for _ in range(min(partial_length(), POOL * BS // (FORKS + 4))):
            w.feed([root])
        children = [w.fork(root) for _ in range(FORKS)]
        w.feed([children[0]])
        w.feed([root] + children[::-1])
        w.verify("after forking a sequence and appending to parent and children")
        w.free(root)
        w.add(root)          # the freed id again, and new sequences that take the freed blocks
        other = w.add()
        for _ in range(BS + 1):
            w.feed([other, root])
        w.verify("after freeing the parent and adding sequences that reuse its blocks")
        for step in range(40):
            live = list(w.history)
            op = w.rnd.random()
            if not live:
                w.add()
            elif op < 0.55 or len(live) < 2:
                w.feed(w.rnd.sample(live, w.rnd.randint(1, len(live))))
            elif op < 0.75 and len(live) < 8:
                w.fork(w.rnd.choice(live))
            elif op < 0.9:
                w.free(w.rnd.choice(live))
            else:
                w.add()
            if step % 8 == 7:
                w.verify(f"after random call {step + 1}")
        w.verify("at the end of the workload")
        c.measured.update(calls=len(w.ops), block_size=BS, num_blocks=POOL, sequences=len(w.history))


if __name__ == "__main__":
    check_fork()
    check_cow()
    check_free()
    check_exhaustion()
    check_cache_workload()
