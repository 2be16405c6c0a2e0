"""Paged decoding under tensor parallelism: logits against an independent full-attention reference
and generate() against the contiguous KVCache (functional), at drawn sizes, on one rank, on the
job's ranks and on a wider gloo CPU group; and the collectives a decode step and the cache issue
(traffic).
# PROBEGATE-CANARY-PAGEDKV-DECODE-7be2f4
"""
import math

import torch

from probegate_probe import (CollectiveCounter, ProbeFailure, check, device_for_rank, locate,
                             param, rng, run_ranks, world_size)

BLOCK_SIZE = param("block_size", 8)
HEADS_PER_RANK, HEAD_DIM, LAYERS = param("heads_per_rank", 2), param("head_dim", 16), param("num_layers", 2)
WIDE_TP = param("wide_tp", 4)
ATOL = RTOL = 1e-4


def make_config(tp, heads_per_rank=HEADS_PER_RANK):
    return dict(vocab_size=96, hidden_size=64, num_heads=heads_per_rank * tp, head_dim=HEAD_DIM,
                num_layers=LAYERS, max_position=128)


def make_weights(c):
    gen = torch.Generator().manual_seed(20240611)
    inner = c["num_heads"] * c["head_dim"]

    def normal(*shape, fan_in):
        return torch.randn(*shape, generator=gen) / math.sqrt(fan_in)

    w = {"embed": normal(c["vocab_size"], c["hidden_size"], fan_in=1),
         "pos": normal(c["max_position"], c["hidden_size"], fan_in=4),
         "lm_head": normal(c["hidden_size"], c["vocab_size"], fan_in=c["hidden_size"])}
    for i in range(c["num_layers"]):
        for name in ("wq", "wk", "wv"):
            w[f"layers.{i}.{name}"] = normal(c["hidden_size"], inner, fan_in=c["hidden_size"])
        w[f"layers.{i}.wo"] = normal(inner, c["hidden_size"], fan_in=inner)
    return w


def script(vocab):
    """Cache events at drawn lengths. Forks land on partly filled or full blocks, sequence 0 holds at
    least one full block shared with its forks when it is freed, and sequence 6, added next, takes
    as many blocks as sequence 0 held: a free that returned shared blocks shows in the children."""
    rnd = rng("decode-script")
    gen = torch.Generator().manual_seed(rnd.randrange(1 << 30))
    events = [("add", 0), ("add", 1)]

    def steps(seq_ids, count):
        for _ in range(count):
            events.append(("step", list(seq_ids), torch.randint(vocab, (len(seq_ids),), generator=gen)))

    both = rnd.randint(1, min(20, 2 * BLOCK_SIZE + 1))
    at_fork = max(both, BLOCK_SIZE + rnd.randint(0, min(8, BLOCK_SIZE)))
    steps([0, 1], both)
    steps([0], at_fork - both)
    events += [("fork", 0, 2), ("fork", 0, 3), ("fork", 1, 4)]
    after_fork = rnd.randint(2, 5)
    steps([0, 1, 2, 3, 4][::rnd.choice((1, -1))], after_fork)
    events += [("free", 0), ("fork", 3, 5), ("add", 6)]
    steps([6], -(-(at_fork + after_fork) // BLOCK_SIZE) * BLOCK_SIZE)
    steps([1, 2, 3, 4, 5, 6], rnd.randint(2, 4))
    return events


def num_blocks():
    return 10 * -(-80 // BLOCK_SIZE) + 4


def reference_logits(c):
    """Next-token logits of every step, recomputing each sequence with causal attention in float64."""
    w = {k: v.double() for k, v in make_weights(c).items()}
    heads, dim = c["num_heads"], c["head_dim"]
    history, expected = {}, []
    for event in script(c["vocab_size"]):
        if event[0] == "add":
            history[event[1]] = []
        elif event[0] == "fork":
            history[event[2]] = list(history[event[1]])
        elif event[0] == "free":
            del history[event[1]]
        else:
            rows = []
            for seq_id, token in zip(event[1], event[2].tolist()):
                history[seq_id].append(token)
                tokens = torch.tensor(history[seq_id])
                n = len(tokens)
                x = w["embed"][tokens] + w["pos"][:n]
                mask = torch.ones(n, n, dtype=torch.bool).triu(1)
                for i in range(c["num_layers"]):
                    q, k, v = ((x @ w[f"layers.{i}.{m}"]).view(n, heads, dim) for m in ("wq", "wk", "wv"))
                    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(dim)
                    probs = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
                    x = x + torch.einsum("hqk,khd->qhd", probs, v).reshape(n, heads * dim) @ w[f"layers.{i}.wo"]
                rows.append(x[-1] @ w["lm_head"])
            expected.append(torch.stack(rows))
    return expected


def generate_args(c):
    rnd = rng("decode-generate")
    prompts = [[rnd.randrange(c["vocab_size"]) for _ in range(rnd.randint(1, 16))] for _ in range(3)]
    return dict(prompts=prompts, max_new_tokens=param("new_tokens", 8), n=param("samples", 3),
                temperature=param("temperature", 1.0), seed=rnd.randrange(1 << 16))


def count(fn):
    with CollectiveCounter() as counter:
        fn()
    return {"by_op": counter.by_op, "calls": counter.calls, "total": counter.total_bytes,
            "uncounted": list(getattr(counter, "uncounted", []))}


def decode_rank(rank, size, c, mode):
    """mode: 'single' (no process group), 'job' (the job's ranks, its backend), 'wide' (gloo CPU)."""
    import pagedkv

    if not hasattr(pagedkv, "PagedKVCache"):
        raise ProbeFailure("`pagedkv` does not export PagedKVCache", location=locate(pagedkv))
    device = device_for_rank(rank) if mode == "job" else torch.device("cpu")
    config = pagedkv.ModelConfig(**c)
    model = pagedkv.TinyDecoder(config, make_weights(c), device=device)
    cache = pagedkv.PagedKVCache(config, num_blocks(), BLOCK_SIZE, device=device)
    logits = []
    for event in script(c["vocab_size"]):
        if event[0] == "add":
            cache.add_sequence(event[1])
        elif event[0] == "fork":
            cache.fork(event[1], event[2])
        elif event[0] == "free":
            cache.free(event[1])
        else:
            logits.append(model.decode_step(event[2], event[1], cache).float().cpu())
    tables = {s: cache.block_manager.get_block_table(s) for s in (1, 2, 3, 4, 5, 6)}
    g = generate_args(c)
    seqs = len(g["prompts"]) * g["n"]
    longest = max(map(len, g["prompts"])) + g["max_new_tokens"]
    contiguous = pagedkv.KVCache(config, max_seqs=seqs, max_len=longest, device=device)
    paged = pagedkv.PagedKVCache(config, seqs * -(-longest // BLOCK_SIZE) + 2, BLOCK_SIZE, device=device)
    generated = [pagedkv.generate(model, cc, **g) for cc in (contiguous, paged)]
    out = {"logits": logits, "tables": tables, "generated": generated}
    if mode != "job":
        return out
    # Traffic, after the functional run so counting cannot disturb it. Sequence 8 shares the last
    # block of sequence 2, so the counted step includes copy-on-write when that block is partly filled.
    cache.fork(2, 8)
    live = [1, 2, 3, 4, 5, 6, 8]
    tokens = torch.arange(len(live)) + 1
    out["step"] = count(lambda: model.decode_step(tokens, live, cache))
    k = torch.zeros(2, config.num_heads // size, config.head_dim, device=device)
    out["per_method"] = {
        "fork": count(lambda: cache.fork(8, 9)),
        "append_token": count(lambda: cache.append_token([9, 8])),
        "write": count(lambda: [cache.write(layer, [9, 8], k, k) for layer in range(config.num_layers)]),
        "read": count(lambda: [cache.read(layer, 9) for layer in range(config.num_layers)]),
        "free": count(lambda: cache.free(9)),
    }
    out["batch"] = len(live)
    return out


def require_counted(results):
    for result in results:
        for counted in [result["step"], *result["per_method"].values()]:
            if counted["uncounted"]:
                # A collective the kit could not size: a harness gap, not the submission's fault.
                raise RuntimeError(f"collectives seen but not sized: {counted['uncounted'][:3]}")


def describe(by_op, calls):
    return ", ".join(f"{op} ×{calls.get(op, 0)} ({nbytes} B)" for op, nbytes in sorted(by_op.items())) or "nothing"


def run(c, mode, size):
    """The per-rank results, or the failure to raise inside the checks that need them."""
    try:
        if mode == "single":
            return [decode_rank(0, 1, c, mode)], None
        backend = "gloo" if mode == "wide" else None
        return run_ranks(decode_rank, world_size=size, args=(c, mode), backend=backend, timeout=240), None
    except Exception as exc:  # RankError or raised in the submission: check() locates it
        return None, exc


def compare_logits(runs, expected, events, c):
    worst = 0.0
    step_events = [i for i, e in enumerate(events) if e[0] == "step"]
    for label, results in runs:
        for rank, result in enumerate(results):
            for n, (got, want) in enumerate(zip(result["logits"], expected)):
                want = want.float()
                err = (got - want).abs()
                worst = max(worst, float(err.max()))
                bad = err > ATOL + RTOL * want.abs()
                if bad.any() or got.shape != want.shape:
                    row = int(bad.any(dim=1).nonzero()[0]) if bad.any() else 0
                    before = [e for e in events[:step_events[n]] if e[0] != "step"]
                    last = f"after {before[-1][0]}{before[-1][1:]}" if before else "before any fork"
                    raise ProbeFailure(
                        f"{label}, rank {rank}, decode step {n} ({last}; block size {BLOCK_SIZE}, "
                        f"{c['num_heads']} heads, head_dim {c['head_dim']}, {c['num_layers']} layers): logits of "
                        f"sequence {events[step_events[n]][1][row]} differ from full causal attention over its "
                        f"tokens by up to {float(err.max()):.3g} (tolerance {ATOL:g} + {RTOL:g}·|x|): the paged "
                        "cache returns the wrong history", measured={"max_abs_error": float(err.max()), "step": n})
    return worst


def compare_generated(runs, c):
    g = generate_args(c)
    for label, results in runs:
        for rank, result in enumerate(results):
            contiguous, paged = result["generated"]
            if paged != contiguous:
                raise ProbeFailure(
                    f"{label}, rank {rank}: generate(n={g['n']}, temperature={g['temperature']}, "
                    f"max_new_tokens={g['max_new_tokens']}, prompts of {[len(p) for p in g['prompts']]} tokens, "
                    f"block size {BLOCK_SIZE}) produces different tokens with PagedKVCache than with KVCache")


def main():
    size = world_size()
    job_config = make_config(size)
    wide_config = make_config(WIDE_TP, max(2, HEADS_PER_RANK))
    events = [e for e in script(job_config["vocab_size"]) if e[0] != "add"]
    single, single_failure = run(job_config, "single", 1)
    results, failure = run(job_config, "job", size)
    wide, wide_failure = run(wide_config, "wide", WIDE_TP)
    try:
        import pagedkv
    except Exception:  # the ranks report the import error itself
        pagedkv = None
    cache_cls = getattr(pagedkv, "PagedKVCache", None)
    decode_step = getattr(getattr(pagedkv, "TinyDecoder", None), "decode_step", None)
    read = getattr(cache_cls, "read", None)
    job_label = f"tensor parallel over {size} ranks"
    with check("paged-decode-matches-reference", "functional", location=locate(read),
               requirements=["decode-equivalence", "cache-protocol", "cache-fork-isolation", "bm-slot-layout"]) as c:
        for exc in (single_failure, failure):
            if exc is not None:
                raise exc
        worst = compare_logits([("one rank", single), (job_label, results)], reference_logits(job_config), events,
                               job_config)
        c.measured.update(max_abs_error=worst, steps=len(results[0]["logits"]), ranks=size, block_size=BLOCK_SIZE)

    with check("generate-matches-contiguous", "functional", location=locate(cache_cls),
               requirements=["decode-equivalence", "keep-existing"]) as c:
        for exc in (single_failure, failure):
            if exc is not None:
                raise exc
        compare_generated([("one rank", single), (job_label, results)], job_config)
        g = generate_args(job_config)
        c.measured.update(n=g["n"], temperature=g["temperature"], max_new_tokens=g["max_new_tokens"])

    with check("paged-decode-wide-tp", "functional", location=locate(cache_cls),
               requirements=["cache-local-heads", "decode-equivalence"]) as c:
        # The job has `size` ranks; a tensor-parallel size above 2 runs here as extra gloo CPU ranks.
        if wide_failure is not None:
            raise wide_failure
        label = f"tensor parallel over {WIDE_TP} gloo CPU ranks"
        wide_events = [e for e in script(wide_config["vocab_size"]) if e[0] != "add"]
        worst = compare_logits([(label, wide)], reference_logits(wide_config), wide_events, wide_config)
        compare_generated([(label, wide)], wide_config)
        c.measured.update(max_abs_error=worst, ranks=WIDE_TP, heads=wide_config["num_heads"])

    with check("decode-step-traffic", "traffic", location=locate(decode_step), requirements=["decode-traffic"]) as c:
        if failure is not None:
            raise failure
        require_counted(results)
        payload = results[0]["batch"] * job_config["hidden_size"] * 4
        want_calls = job_config["num_layers"] if size > 1 else 0
        want_bytes = want_calls * 2 * (size - 1) * payload // size
        for rank, result in enumerate(results):
            step = result["step"]
            c.measured.update(bytes=step["total"], expected_bytes=want_bytes, calls=sum(step["calls"].values()),
                              expected_calls=want_calls)
            only_all_reduce = set(step["by_op"]) <= {"all_reduce"}
            if not (only_all_reduce and step["calls"].get("all_reduce", 0) == want_calls
                    and step["total"] == want_bytes):
                noisy = [m for m, v in result["per_method"].items() if v["total"] or v["calls"]]
                where = locate(getattr(cache_cls, noisy[0])) if noisy else locate(decode_step)
                raise ProbeFailure(
                    f"rank {rank}: one decode step of {result['batch']} sequences issued "
                    f"{describe(step['by_op'], step['calls'])}; expected only the {want_calls} per-layer "
                    f"all_reduce of the attention output ({want_bytes} B). "
                    + (f"PagedKVCache.{noisy[0]} communicates; every rank's BlockManager makes the same "
                       "decisions, so the cache needs no collectives" if noisy else ""),
                    location=where)

    with check("cache-issues-no-collectives", "traffic", location=locate(cache_cls),
               requirements=["cache-no-communication"]) as c:
        if failure is not None:
            raise failure
        require_counted(results)
        for rank, result in enumerate(results[1:], start=1):
            if result["tables"] != results[0]["tables"]:
                raise ProbeFailure(
                    f"rank {rank}'s block_manager holds block tables {result['tables']} where rank 0's holds "
                    f"{results[0]['tables']} after the same cache calls: the managers must make identical, "
                    "deterministic decisions", location=locate(cache_cls))
        for rank, result in enumerate(results):
            for method, counted in result["per_method"].items():
                c.measured[f"bytes.{method}"] = max(c.measured.get(f"bytes.{method}", 0), counted["total"])
                if counted["calls"]:
                    raise ProbeFailure(
                        f"rank {rank}: PagedKVCache.{method} issued {describe(counted['by_op'], counted['calls'])}; "
                        "the cache must not communicate (tensor-parallel ranks keep identical block tables "
                        "without exchanging them)", location=locate(getattr(cache_cls, method)))


if __name__ == "__main__":
    main()
