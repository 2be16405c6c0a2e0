"""Hidden probe of vllm-eagle-prefix-cache: which blocks an EAGLE lookup returns (functional).

The official tests look up a prompt whose every full block is cached, at block size 16. This probe draws the block
size, the prompt length and how much of it is cached: a prompt that shares only its first k blocks with the cache
must get k - 1 of them back (the last *matched* block is dropped, not the last block of the prompt), the same
block ids the cache holds, no error on a miss, the usual hit without EAGLE and with prompt logprobs, and the
Scheduler must hand EAGLE to its KV cache manager.
"""
# PROBEGATE-CANARY-VLLM-EAGLE-FUNC-2d8e51
from probegate_probe import check, param  # bound before the submission is imported

import _kv

BS = int(param("block_size", 16))
FULL = int(param("prompt_blocks", 6))
TAIL = int(param("tail_tokens", 5)) % BS
SHARED = max(1, min(FULL - 1, int(param("shared_blocks", 3))))
NUM_BLOCKS = 4 * FULL + 8


def prompt(first_token: int, shared: int, total_tokens: int):
    """Tokens whose first `shared` blocks equal the primed prompt's (tokens 0..), the rest differing."""
    toks = list(range(shared * BS))
    toks += [first_token + i for i in range(total_tokens - len(toks))]
    return toks


with check("eagle-partial-hit-drops-last-matched", "functional",
           location={"path": _kv.MANAGER_FILE}, requirements=["drop-last-matched", "partial-hit"]) as c:
    n = FULL * BS + TAIL
    # The drawn overlap, and an overlap of one block (which an EAGLE hit turns into none).
    for shared in sorted({SHARED, 1}):
        mgr = _kv.manager(BS, NUM_BLOCKS, eagle=True)
        primed = _kv.prime(mgr, "primer", range(n))
        req = _kv.request("partial", prompt(50_000, shared, n))
        blocks, computed = mgr.get_computed_blocks(req)
        want = _kv.expected_hit(n, shared, BS, eagle=True)
        got = [b.block_id for b in blocks]
        c.measured.update(block_size=BS, prompt_tokens=n, shared_blocks=shared, expected_blocks=want,
                          got_blocks=len(got))
        if len(got) != want or computed != want * BS:
            c.fail(f"a prompt sharing its first {shared} full block(s) (block size {BS}) with the cache got "
                   f"{len(got)} block(s) and {computed} computed tokens with EAGLE; expected {want} blocks "
                   f"({want * BS} tokens): the last matched block is the one to drop")
        if got != primed[:want]:
            c.fail(f"the hit returned blocks {got}, not the cached prefix blocks {primed[:want]}")

with check("eagle-full-hit-any-length", "functional",
           location={"path": _kv.MANAGER_FILE}, requirements=["drop-last-matched"]) as c:
    bad = []
    for tail in sorted({0, TAIL, BS - 1}):
        n = FULL * BS + tail
        mgr = _kv.manager(BS, NUM_BLOCKS, eagle=True)
        primed = _kv.prime(mgr, "primer", range(n))
        blocks, computed = mgr.get_computed_blocks(_kv.request("again", range(n)))
        want = _kv.expected_hit(n, FULL, BS, eagle=True)
        if [b.block_id for b in blocks] != primed[:want] or computed != want * BS:
            bad.append(f"{n} tokens: got {len(blocks)} blocks/{computed} tokens, expected {want}/{want * BS}")
    c.measured.update(block_size=BS, prompt_blocks=FULL)
    if bad:
        c.fail("a fully cached prompt with EAGLE (block size %d): %s" % (BS, "; ".join(bad)))

with check("eagle-miss-and-single-block", "functional",
           location={"path": _kv.MANAGER_FILE}, requirements=["no-hit"]) as c:
    mgr = _kv.manager(BS, NUM_BLOCKS, eagle=True)
    blocks, computed = mgr.get_computed_blocks(_kv.request("cold", range(FULL * BS + TAIL)))
    if list(blocks) or computed:
        c.fail(f"a lookup in an empty cache with EAGLE returned {len(blocks)} blocks / {computed} tokens")
    _kv.prime(mgr, "one", range(BS + 1))
    blocks, computed = mgr.get_computed_blocks(_kv.request("one-again", range(BS + 1)))
    if list(blocks) or computed:
        c.fail(f"a one-block hit with EAGLE returned {len(blocks)} blocks / {computed} tokens; expected none")

with check("no-eagle-hit-unchanged", "functional",
           location={"path": _kv.MANAGER_FILE}, requirements=["eagle-off-unchanged"]) as c:
    n = FULL * BS + TAIL
    mgr = _kv.manager(BS, NUM_BLOCKS, eagle=False)
    primed = _kv.prime(mgr, "primer", range(n))
    blocks, computed = mgr.get_computed_blocks(_kv.request("partial", prompt(60_000, SHARED, n)))
    want = _kv.expected_hit(n, SHARED, BS, eagle=False)
    if [b.block_id for b in blocks] != primed[:want] or computed != want * BS:
        c.fail(f"without EAGLE a prompt sharing {SHARED} blocks got {len(blocks)} blocks / {computed} tokens; "
               f"expected {want} / {want * BS}")
    mgr = _kv.manager(BS, NUM_BLOCKS, eagle=True)
    _kv.prime(mgr, "primer", range(n))
    blocks, computed = mgr.get_computed_blocks(_kv.request("plp", range(n), prompt_logprobs=2))
    if list(blocks) or computed:
        c.fail(f"a prompt-logprobs request with EAGLE got {len(blocks)} cached blocks; prefix caching is skipped there")

with check("scheduler-enables-eagle", "functional",
           location={"path": _kv.SCHEDULER_FILE}, requirements=["scheduler-wiring"]) as c:
    n = FULL * BS + TAIL
    results = {}
    for method in ("eagle", "ngram", None):
        sched = _kv.scheduler(BS, NUM_BLOCKS, method)
        _kv.prime(sched.kv_cache_manager, "primer", range(n))
        blocks, _ = sched.kv_cache_manager.get_computed_blocks(_kv.request("again", range(n)))
        results[str(method)] = len(blocks)
    full = _kv.expected_hit(n, FULL, BS, eagle=False)
    c.measured.update(**{f"hit_{k}": v for k, v in results.items()}, expected_without_eagle=full)
    if results["eagle"] != max(0, full - 1):
        c.fail(f"a Scheduler whose speculative config uses EAGLE got a {results['eagle']}-block hit from its KV "
               f"cache manager; expected {max(0, full - 1)} (the scheduler must create the manager with EAGLE on)")
    if results["ngram"] != full or results["None"] != full:
        c.fail(f"a Scheduler without EAGLE (ngram: {results['ngram']}, none: {results['None']} blocks) must keep "
               f"the full {full}-block hit")
