"""Shared set-up of the vllm-eagle-prefix-cache probes (not itself a probe: it does not match probe_*.py).

The requirement (prompt.md): with EAGLE speculative decoding, a prefix-cache hit gives the request its longest
cached prefix less its last matched block, which the request recomputes (the drafter needs that block's hidden
states); the cache itself, the request's block hashes and the hit statistics stay consistent.
Everything here builds real vLLM objects of the workspace (KVCacheManager, Request, Scheduler) on CPU.
"""
# PROBEGATE-CANARY-VLLM-EAGLE-7c41d0
import types

import probegate_vllm  # noqa: F401  (setup/: registers the workspace's vllm package without its __init__)
import torch

from vllm.sampling_params import SamplingParams
from vllm.utils import sha256
from vllm.v1.core.kv_cache_manager import KVCacheManager
from vllm.v1.core.kv_cache_utils import hash_request_tokens
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.request import Request

MANAGER_FILE = "vllm/v1/core/kv_cache_manager.py"
SCHEDULER_FILE = "vllm/v1/core/sched/scheduler.py"


def kv_cache_config(block_size: int, num_blocks: int) -> KVCacheConfig:
    return KVCacheConfig(
        num_blocks=num_blocks,
        tensors={},
        kv_cache_groups=[KVCacheGroupSpec(["layer"], FullAttentionSpec(block_size, 1, 1, torch.float32, False))],
    )


def manager(block_size: int, num_blocks: int, eagle: bool, log_stats: bool = False, hash_algo: str = "builtin"):
    kwargs = dict(max_model_len=8192, enable_caching=True, caching_hash_algo=hash_algo, log_stats=log_stats)
    if eagle:
        kwargs["use_eagle"] = True
    return KVCacheManager(kv_cache_config(block_size, num_blocks), **kwargs)


def request(request_id: str, tokens, prompt_logprobs=None) -> Request:
    return Request(
        request_id=request_id,
        prompt_token_ids=list(tokens),
        multi_modal_inputs=None,
        multi_modal_hashes=None,
        multi_modal_placeholders=None,
        sampling_params=SamplingParams(max_tokens=17, prompt_logprobs=prompt_logprobs),
        eos_token_id=100_000,
        arrival_time=0,
        lora_request=None,
    )


def prime(mgr: KVCacheManager, request_id: str, tokens) -> list:
    """Run one request through the cache (lookup, allocate, free) so its full blocks stay cached; its block ids."""
    req = request(request_id, tokens)
    hit, _ = mgr.get_computed_blocks(req)
    blocks = mgr.allocate_slots(req, len(tokens) - len(hit) * mgr.block_size, hit)
    assert blocks is not None, "priming the cache ran out of blocks (probe sizing)"
    ids = [b.block_id for b in mgr.req_to_blocks[req.request_id]]
    mgr.free(req)
    return ids


def expected_hit(num_tokens: int, shared_full_blocks: int, block_size: int, eagle: bool) -> int:
    """Blocks a lookup must return: the cached full blocks shared with the prompt, never the prompt's last
    token's block when the prompt ends on a block boundary, and with EAGLE one block fewer when any hit remains."""
    lookable = num_tokens // block_size
    if num_tokens % block_size == 0:
        lookable -= 1
    hit = min(shared_full_blocks, lookable)
    if eagle and hit > 0:
        hit -= 1
    return hit


def fresh_hashes(mgr: KVCacheManager, req: Request) -> list:
    return hash_request_tokens(mgr.caching_hash_fn, mgr.block_size, req)


def cache_snapshot(mgr: KVCacheManager) -> dict:
    """What a lookup must leave as it was: every cached hash → block ids, each block's hash and ref count, the free
    queue in order."""
    pool = mgr.block_pool
    return {
        "cached": {h: sorted(d) for h, d in pool.cached_block_hash_to_block.items() if d},
        "block_hash": {b.block_id: b.block_hash for b in pool.blocks},
        "ref_cnt": {b.block_id: b.ref_cnt for b in pool.blocks},
        "free_queue": [b.block_id for b in pool.free_block_queue.get_all_free_blocks()],
        "num_free": pool.get_num_free_blocks(),
    }


def diff_snapshots(before: dict, after: dict) -> list:
    out = []
    lost = [h for h in before["cached"] if h not in after["cached"]]
    if lost:
        out.append(f"{len(lost)} cached block hash(es) left the prefix cache")
    changed = [b for b, h in before["block_hash"].items() if after["block_hash"].get(b) != h]
    if changed:
        out.append(f"block(s) {changed[:6]} changed their block hash")
    refs = [b for b, r in before["ref_cnt"].items() if after["ref_cnt"].get(b) != r]
    if refs:
        out.append(f"block(s) {refs[:6]} changed their ref count")
    if before["free_queue"] != after["free_queue"]:
        out.append("the free-block queue changed order or content")
    if before["num_free"] != after["num_free"]:
        out.append(f"free blocks went from {before['num_free']} to {after['num_free']}")
    return out


def scheduler(block_size: int, num_blocks: int, eagle_method):
    """A real v1 Scheduler on stand-in configs (text-only model, no KV connector); eagle_method None: no spec decode."""
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.structured_output import StructuredOutputManager

    spec = None
    if eagle_method is not None:
        spec = types.SimpleNamespace(
            num_speculative_tokens=2, method=eagle_method, use_eagle=lambda: eagle_method in ("eagle", "eagle3"))
    cfg = types.SimpleNamespace(
        scheduler_config=types.SimpleNamespace(max_num_seqs=8, max_num_batched_tokens=8192, max_model_len=8192),
        cache_config=types.SimpleNamespace(
            num_gpu_blocks=num_blocks, block_size=block_size, enable_prefix_caching=True,
            prefix_caching_hash_algo="builtin"),
        model_config=types.SimpleNamespace(is_multimodal_model=False),
        lora_config=None, kv_transfer_config=None, speculative_config=spec, decoding_config=None)
    som = StructuredOutputManager.__new__(StructuredOutputManager)
    return Scheduler(vllm_config=cfg, kv_cache_config=kv_cache_config(block_size, num_blocks),
                     structured_output_manager=som, log_stats=False)
