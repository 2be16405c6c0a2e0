"""Hidden probe of vllm-eagle-prefix-cache: what an EAGLE lookup leaves behind (state).

Dropping the last matched block is a decision about one request; the official tests only count the blocks returned.
This probe checks that the lookup leaves the shared prefix cache exactly as it was (the dropped block stays cached
for every other request, no ref count or free-queue change), that the request's own block hashes stay those of its
tokens (so the blocks it fills later are cached under the right hashes), and that the hit statistics count the
blocks the request actually got.
"""
# PROBEGATE-CANARY-VLLM-EAGLE-STATE-93fa06
from probegate_probe import check, param  # bound before the submission is imported

import _kv

BS = int(param("block_size", 16))
FULL = int(param("prompt_blocks", 6))
TAIL = int(param("tail_tokens", 5)) % BS
SHARED = max(1, min(FULL - 1, int(param("shared_blocks", 3))))
NUM_BLOCKS = 4 * FULL + 8

with check("eagle-lookup-leaves-cache", "state",
           location={"path": _kv.MANAGER_FILE}, requirements=["cache-untouched"]) as c:
    problems = []
    for tail in sorted({0, TAIL}):
        n = FULL * BS + tail
        mgr = _kv.manager(BS, NUM_BLOCKS, eagle=True)
        primed = _kv.prime(mgr, "primer", range(n))
        before = _kv.cache_snapshot(mgr)
        blocks, _ = mgr.get_computed_blocks(_kv.request("again", range(n)))
        after = _kv.cache_snapshot(mgr)
        found = _kv.diff_snapshots(before, after)
        if found:
            problems.append(f"{n} tokens: " + ", ".join(found))
        # The dropped block (the last one of the hit) is still the cached block for its hash.
        dropped = primed[len(blocks)] if len(blocks) < len(primed) else None
        if dropped is not None and before["block_hash"].get(dropped) is not None:
            h = before["block_hash"][dropped]
            cached = mgr.block_pool.get_cached_block(h)
            if cached is None or cached.block_id != dropped:
                problems.append(f"{n} tokens: the dropped block {dropped} is no longer the prefix-cache hit for its hash")
    c.measured.update(block_size=BS, prompt_blocks=FULL)
    if problems:
        c.fail("an EAGLE lookup changed the shared prefix cache: " + "; ".join(problems))

with check("request-block-hashes-intact", "state",
           location={"path": _kv.MANAGER_FILE}, requirements=["hashes-intact"]) as c:
    problems = []
    for label, shared, tail in (("full hit", FULL, 0), ("full hit", FULL, TAIL), ("partial hit", SHARED, TAIL)):
        n = FULL * BS + tail
        mgr = _kv.manager(BS, NUM_BLOCKS, eagle=True)
        _kv.prime(mgr, "primer", range(n))
        toks = list(range(shared * BS)) + [70_000 + i for i in range(n - shared * BS)]
        req = _kv.request("r", toks)
        hit, _ = mgr.get_computed_blocks(req)
        want = _kv.fresh_hashes(mgr, req)
        kept = list(mgr.req_to_block_hashes[req.request_id])
        if kept != want:
            problems.append(f"{label}, {n} tokens: the request's stored block hashes ({len(kept)}) are not those of "
                            f"its tokens ({len(want)})")
            continue
        if mgr.allocate_slots(req, n - len(hit) * BS, hit) is None:
            raise RuntimeError("probe sizing: allocation failed")
        for i, block in enumerate(mgr.req_to_blocks[req.request_id][: n // BS]):
            if block.block_hash != want[i]:
                problems.append(f"{label}, {n} tokens: full block {i} (id {block.block_id}) is cached under the hash "
                                f"of another position")
                break
    c.measured.update(block_size=BS, prompt_blocks=FULL, shared_blocks=SHARED)
    if problems:
        c.fail("after an EAGLE lookup: " + "; ".join(problems))

with check("hit-stats-count-returned-blocks", "state",
           location={"path": _kv.MANAGER_FILE}, requirements=["stats-hits"]) as c:
    n = FULL * BS + TAIL
    mgr = _kv.manager(BS, NUM_BLOCKS, eagle=True, log_stats=True)
    _kv.prime(mgr, "primer", range(n))
    mgr.make_prefix_cache_stats()  # reset
    blocks, _ = mgr.get_computed_blocks(_kv.request("again", range(n)))
    toks = list(range(SHARED * BS)) + [80_000 + i for i in range(n - SHARED * BS)]
    blocks2, _ = mgr.get_computed_blocks(_kv.request("partial", toks))
    stats = mgr.make_prefix_cache_stats()
    c.measured.update(hits=stats.hits, returned=len(blocks) + len(blocks2), requests=stats.requests)
    if stats.requests != 2 or stats.hits != len(blocks) + len(blocks2):
        c.fail(f"prefix cache stats count {stats.hits} hit block(s) over {stats.requests} request(s); the two EAGLE "
               f"lookups returned {len(blocks) + len(blocks2)} block(s)")
