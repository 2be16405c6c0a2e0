"""Structure of the new API and the contract of each stated method, at drawn sizes.

One process, no process group: the submission runs as a single tensor-parallel rank. Only the
interfaces the prompt states are used (names, signatures, return values, the cache protocol).
# PROBEGATE-CANARY-PAGEDKV-STRUCTURE-5d81e2
"""
import importlib

import torch

from probegate_probe import ProbeFailure, check, locate, param, require_signature, rng

from _pkv_probe import api, ceil_div, expect

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
DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}
BS = param("block_size", 6)
POOL = param("pool_blocks", 40)


def tensors_in(root, depth_limit=6):
    """Tensors reachable from root's attributes and containers."""
    seen, found, todo = set(), [], [(root, 0)]
    while todo:
        obj, depth = todo.pop()
        if id(obj) in seen or depth > depth_limit:
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            found.append(obj)
        elif isinstance(obj, dict):
            todo.extend((v, depth + 1) for v in obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            todo.extend((v, depth + 1) for v in obj)
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            todo.extend((v, depth + 1) for v in vars(obj).values())
    return found


def check_structure():
    with check("block-manager-interface", "structure",
               requirements=["exports", "bm-signature", "bm-bookkeeping-only"]) as c:
        manager_cls = api("BlockManager")
        c.location = locate(manager_cls)
        for method, params in BLOCK_MANAGER_METHODS.items():
            require_signature(manager_cls, method, params)
        error_cls = api("NoFreeBlocksError")
        expect(isinstance(error_cls, type) and issubclass(error_cls, RuntimeError),
               "NoFreeBlocksError must be a RuntimeError subclass", error_cls)
        module = importlib.import_module("pagedkv.block_manager")
        expect(getattr(module, "BlockManager", None) is manager_cls,
               "pagedkv.BlockManager must be the class of the new module pagedkv/block_manager.py", module)
        m = manager_cls(POOL, BS)
        m.allocate(0, 3 * BS)
        m.fork(0, 1)
        m.append_slot(1)
        held = tensors_in(m)
        expect(not held, f"a BlockManager holds {len(held)} tensor(s); the manager is bookkeeping only "
               "(no tensors): the cache owns the keys and values", manager_cls)

    with check("paged-cache-interface", "structure",
               requirements=["exports", "cache-signature", "cache-block-manager"]) as c:
        cache_cls = api("PagedKVCache")
        c.location = locate(cache_cls)
        for method, params in CACHE_METHODS.items():
            require_signature(cache_cls, method, params)
        module = importlib.import_module("pagedkv.paged_cache")
        expect(getattr(module, "PagedKVCache", None) is cache_cls,
               "pagedkv.PagedKVCache must be the class of the new module pagedkv/paged_cache.py", module)
        config = api("ModelConfig")(num_heads=2, head_dim=4, num_layers=1)
        cache = cache_cls(config, POOL, BS)
        manager = getattr(cache, "block_manager", None)
        expect(isinstance(manager, api("BlockManager")),
               f"PagedKVCache.block_manager must be the cache's BlockManager, got {type(manager).__name__}",
               cache_cls)
        expect(manager.get_num_free_blocks() == POOL,
               f"PagedKVCache(config, num_blocks={POOL}, block_size={BS}).block_manager has "
               f"{manager.get_num_free_blocks()} free blocks, expected {POOL}", cache_cls)


def check_manager_contract():
    with check("block-manager-contract", "structure",
               requirements=["bm-pool", "bm-allocate", "bm-append-slot", "bm-slot-layout", "bm-getters"]) as c:
        manager_cls = api("BlockManager")
        c.location = locate(manager_cls)
        # The drawn block size, and 1, the smallest positive one (a block of one slot: every token
        # takes a new block), which the draw reaches only now and then.
        for bs in sorted({BS, 1}):
            manager_contract(manager_cls, bs, c)
        one_block_pool(manager_cls, BS)


def one_block_pool(manager_cls, bs):
    """A pool of one block ("a pool of num_blocks physical blocks": any positive number makes one)."""
    try:
        m = manager_cls(1, bs)
    except Exception as e:
        raise ProbeFailure(f"BlockManager(1, {bs}) raised {type(e).__name__}: {e}; a pool of one block is a "
                           "pool: any positive num_blocks and block_size make one", location=locate(manager_cls.__init__))
    table = m.allocate(1, bs)
    expect(len(table) == 1 and m.get_num_free_blocks() == 0,
           f"BlockManager(1, {bs}).allocate(1, {bs}) returned {table!r} and left {m.get_num_free_blocks()} free "
           "blocks; expected its one block and none free", manager_cls.allocate)
    # Asked here as well as in the contract, whose drawn num_tokens may be 0 (no block held, nothing to count).
    expect(m.get_ref_count(table[0]) == 1, f"the one block of a sequence that holds it alone reports ref count "
           f"{m.get_ref_count(table[0])}; get_ref_count is the number of sequences referencing the block",
           manager_cls.get_ref_count)


def manager_contract(manager_cls, bs, c):
    """The contract of each BlockManager method on one manager of block size bs."""
    try:
        m = manager_cls(POOL, bs)
    except Exception as e:
        raise ProbeFailure(f"BlockManager({POOL}, {bs}) raised {type(e).__name__}: {e}; any positive "
                           "num_blocks and block_size make a pool", location=locate(manager_cls.__init__))
    n = min(param("num_tokens", 13), (POOL // 2) * bs)
    c.measured.update(num_blocks=POOL, block_size=bs, num_tokens=n)
    expect(m.get_num_free_blocks() == POOL, f"BlockManager({POOL}, {bs}) starts with "
           f"{m.get_num_free_blocks()} free blocks, expected {POOL}", manager_cls.__init__)
    counts = [m.get_ref_count(b) for b in range(POOL)]
    expect(counts == [0] * POOL, f"free blocks must have ref count 0, got {sorted(set(counts))}",
           manager_cls.get_ref_count)
    table = m.allocate(7, n)
    want = ceil_div(n, bs)
    expect(isinstance(table, list) and len(table) == want and len(set(table)) == want
           and all(isinstance(b, int) and 0 <= b < POOL for b in table),
           f"allocate(7, {n}) with block_size {bs} returned {table!r}; expected a list of {want} distinct "
           f"block ids in [0, {POOL})", manager_cls.allocate)
    expect(m.get_block_table(7) == table and m.get_seq_len(7) == n,
           f"after allocate(7, {n}) get_block_table/get_seq_len give {m.get_block_table(7)}/"
           f"{m.get_seq_len(7)}, expected {table}/{n}", manager_cls.allocate)
    expect(m.get_num_free_blocks() == POOL - want, f"allocate(7, {n}) left {m.get_num_free_blocks()} "
           f"free blocks, expected {POOL - want}", manager_cls.allocate)
    refs = [m.get_ref_count(b) for b in table]
    expect(refs == [1] * want, f"blocks held by exactly one sequence report ref counts {refs}; "
           "get_ref_count is the number of sequences referencing the block", manager_cls.get_ref_count)
    empty = m.allocate(8, 0)
    expect(empty == [] and m.get_seq_len(8) == 0 and m.get_num_free_blocks() == POOL - want,
           f"allocate(8, 0) returned {empty!r} and left {m.get_num_free_blocks()} free blocks; a sequence "
           f"of 0 tokens gets ceil(0 / {bs}) = 0 blocks", manager_cls.allocate)
    gen = rng("contract")
    for seq_id, start in ((8, 0), (7, n)):
        for p in range(start, start + gen.randint(1, 2 * bs + 1)):
            result = m.append_slot(seq_id)
            expect(isinstance(result, tuple) and len(result) == 2,
                   f"append_slot({seq_id}) returned {result!r}, expected a (slot, copy) pair",
                   manager_cls.append_slot)
            slot, copy = result
            table = m.get_block_table(seq_id)
            expect(copy is None, f"append_slot({seq_id}) on an unshared sequence returned copy={copy!r}, "
                   "expected None", manager_cls.append_slot)
            expect(len(table) == ceil_div(p + 1, bs), f"after {p + 1} tokens sequence {seq_id} holds "
                   f"{len(table)} blocks of {bs} slots, expected {ceil_div(p + 1, bs)}: a new block is "
                   "taken only when the last one is full", manager_cls.append_slot)
            want_slot = table[p // bs] * bs + p % bs
            expect(slot == want_slot, f"append_slot({seq_id}) for token {p} returned slot {slot}, expected "
                   f"table[{p} // {bs}] * {bs} + {p} % {bs} = {want_slot} (block size {bs}, table {table})",
                   manager_cls.append_slot, block_size=bs, position=p)
            expect(m.get_seq_len(seq_id) == p + 1, f"get_seq_len({seq_id}) is {m.get_seq_len(seq_id)} "
                   f"after {p + 1} tokens", manager_cls.get_seq_len)
    used = len(m.get_block_table(7)) + len(m.get_block_table(8))
    expect(m.get_num_free_blocks() == POOL - used, f"{m.get_num_free_blocks()} free blocks with {used} "
           f"of {POOL} in use", manager_cls.get_num_free_blocks)


def check_cache_contract():
    with check("paged-cache-contract", "structure",
               requirements=["cache-protocol", "cache-dtype-device", "cache-block-manager", "cache-signature"]) as c:
        cache_cls = api("PagedKVCache")
        c.location = locate(cache_cls)
        dtype_name = param("dtype", "float64")
        dtype = DTYPES[dtype_name]
        heads, dim, layers = param("heads_per_rank", 2), param("head_dim", 8), param("num_layers", 2)
        config = api("ModelConfig")(num_heads=heads, head_dim=dim, num_layers=layers)
        c.measured.update(dtype=dtype_name, block_size=BS, num_blocks=POOL, heads=heads, head_dim=dim)
        default = cache_cls(config, POOL, BS)
        default.add_sequence(0)
        default.append_token([0])
        default.write(0, [0], torch.ones(1, heads, dim), torch.ones(1, heads, dim))
        k0, _ = default.read(0, 0)
        expect(k0.dtype == torch.float32 and k0.device.type == "cpu",
               f"PagedKVCache(config, num_blocks, block_size) reads back {k0.dtype} on {k0.device}; the "
               "default is float32 on KVCache's default device (cpu without an NCCL process group)",
               cache_cls.read)

        # The device it is given: on a CPU runner the meta device is the one that differs from the
        # default, and the protocol runs on it without data. A design that cannot run there (a
        # `.tolist()` of a device tensor, say) says nothing here; one that runs must stay on it.
        try:
            on_meta = cache_cls(config, POOL, BS, device=torch.device("meta"))
            on_meta.add_sequence(0)
            on_meta.append_token([0])
            k_meta = on_meta.read(0, 0)[0]
        except Exception:
            k_meta = None
        if isinstance(k_meta, torch.Tensor):
            expect(k_meta.device.type == "meta",
                   f"PagedKVCache(config, num_blocks, block_size, device=meta) reads back on {k_meta.device}: "
                   "the cache's keys and values must live on the device it is given", cache_cls.__init__)

        cache = cache_cls(config, POOL, BS, dtype=dtype)
        gen = torch.Generator().manual_seed(rng("cache-contract").randrange(1 << 30))
        written = {}

        def step(seq_ids):
            before = [cache.seq_len(s) for s in seq_ids]
            positions = cache.append_token(seq_ids)
            expect(isinstance(positions, torch.Tensor) and positions.tolist() == before,
                   f"append_token({seq_ids}) returned {positions!r}, expected a tensor of the new "
                   f"positions {before}", cache_cls.append_token)
            for layer in range(layers):
                k = torch.randn(len(seq_ids), heads, dim, generator=gen, dtype=torch.float64).to(dtype)
                v = torch.randn(len(seq_ids), heads, dim, generator=gen, dtype=torch.float64).to(dtype)
                cache.write(layer, seq_ids, k, v)
                for i, s in enumerate(seq_ids):
                    written.setdefault((s, layer), []).append((k[i], v[i]))

        def verify(seq_id):
            n = len(written.get((seq_id, 0), []))
            expect(cache.seq_len(seq_id) == n, f"seq_len({seq_id}) is {cache.seq_len(seq_id)} after {n} "
                   "tokens", cache_cls.seq_len)
            manager = cache.block_manager
            expect(manager.get_seq_len(seq_id) == n and len(manager.get_block_table(seq_id)) == ceil_div(n, BS),
                   f"the cache's block_manager reports length {manager.get_seq_len(seq_id)} and "
                   f"{len(manager.get_block_table(seq_id))} blocks for a sequence of {n} tokens "
                   f"(block size {BS})", cache_cls)
            for layer in range(layers if n else 0):  # the model never reads an empty history
                keys, values = cache.read(layer, seq_id)
                expect(tuple(keys.shape) == (n, heads, dim) and tuple(values.shape) == (n, heads, dim),
                       f"read({layer}, {seq_id}) returned shapes {tuple(keys.shape)}/{tuple(values.shape)}, "
                       f"expected ({n}, {heads}, {dim})", cache_cls.read)
                expect(keys.dtype == dtype and values.dtype == dtype,
                       f"PagedKVCache(..., dtype={dtype_name}) reads back {keys.dtype}: the cache must store "
                       "keys and values in the dtype it was given", cache_cls.__init__)
                want_k = torch.stack([k for k, _ in written[(seq_id, layer)]])
                want_v = torch.stack([v for _, v in written[(seq_id, layer)]])
                expect(torch.equal(keys, want_k) and torch.equal(values, want_v),
                       f"read({layer}, {seq_id}) does not return the {dtype_name} keys/values written to "
                       f"sequence {seq_id} ({n} tokens)", cache_cls.read)

        cache.add_sequence(3)
        verify(3)
        for _ in range(BS + 2):
            step([3])
        cache.add_sequence(5)
        for _ in range(BS + 1):
            step([5, 3])
        verify(3)
        verify(5)
        cache.free(3)
        for layer in range(layers):
            written.pop((3, layer), None)
        cache.add_sequence(3)  # an id can be used again once freed
        for _ in range(2):
            step([3, 5])
        verify(3)
        verify(5)


if __name__ == "__main__":
    check_structure()
    check_manager_contract()
    check_cache_contract()
