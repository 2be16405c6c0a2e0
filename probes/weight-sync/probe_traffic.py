"""Traffic checks of WeightSyncer: each parameter byte once per sync, one collective per bucket, sent
in the order `buckets` states, nothing when the rollout ranks are already up to date; and the same
with more ranks than the job has GPUs (extra gloo CPU ranks), where a trainer that sends to each
rollout rank separately moves its weights once per rollout rank."""
import torch

import _wsync_probe as W
from probegate_probe import CollectiveCounter, check, device_for_rank, param, rng

F32 = torch.float32
CONTROL_BYTES = 1024  # the version header and the like
CONTROL_CALLS = 2


def traffic_specs(r, bucket, half):
    """Tensors of 55-90% of a bucket (one per bucket), many 1-4 KiB ones (a bucket really must be one
    collective), and a block of another dtype."""
    specs = [(W.shape_of(int(r.uniform(0.55, 0.9) * bucket) // 4, r), F32) for _ in range(8)]
    for _ in range(r.randint(192, 256)):
        specs.insert(r.randint(0, len(specs)), (W.shape_of(r.randint(256, 1024), r), F32))
    esize = torch.empty((), dtype=half).element_size()
    at = r.randint(0, len(specs))
    specs[at:at] = [(W.shape_of(int(r.uniform(0.1, 0.3) * bucket) // esize, r), half) for _ in range(6)]
    return specs


def fanout_specs(r, bucket, half):
    return [(W.shape_of(r.randint(64, bucket // 8), r), r.choice([F32, F32, half])) for _ in range(r.randint(24, 40))]


def traffic_rank(rank, world_size, specs, bucket):
    device = device_for_rank(rank)
    model = W.build(specs, seed=100 + rank, device=device)
    WeightSyncer = W.import_syncer()

    syncer = WeightSyncer(model, bucket_bytes=bucket, src=0)

    def sync(version):
        return syncer.sync(version) if rank == 0 else syncer.sync()

    out = {"names": [n for n, _ in model.named_parameters()], "buckets": [list(b) for b in syncer.buckets]}
    for label, version in (("first", 1), ("repeat", 1), ("update", 2)):
        if label == "update" and rank == 0:
            g = torch.Generator(device=device).manual_seed(7)
            with torch.no_grad():
                for p in model.parameters():
                    p.normal_(generator=g)
        with CollectiveCounter() as counter:
            sync(version)
        out[label] = {"bytes": counter.total_bytes, "calls": dict(counter.calls), "by_op": counter.by_op,
                      "payloads": [e[1] for e in counter.events]}
        out["mode"] = counter.mode
    return out


def fanout_rank(rank, world_size, specs, bucket, src):
    """On gloo CPU ranks whatever the job's backend: the prompt requires gloo to work."""
    from wsync import sync_weights

    device = torch.device("cpu")
    want = W.values(specs, 21)
    model = W.build(specs, seed=300 + rank, device=device)
    legacy = W.build(specs[:6], seed=400 + rank, device=device)
    legacy_want = W.values(specs[:6], 22)
    if rank == src:
        W.load(model, want)
        W.load(legacy, legacy_want)
    WeightSyncer = W.import_syncer()
    syncer = WeightSyncer(model, bucket_bytes=bucket, src=src)
    out = {"rank": rank, "returns": [], "bytes": []}
    for _ in range(2):  # version 0 (Trainer.version before its first step), then the same again
        with CollectiveCounter() as counter:
            out["returns"].append(syncer.sync(0) if rank == src else syncer.sync())
        out["bytes"].append(counter.total_bytes)
    out["version"] = syncer.version
    out["diff"] = W.first_difference(model, want)
    out["legacy_version"] = sync_weights(legacy, 5 if rank == src else None, src=src)
    out["legacy_diff"] = W.first_difference(legacy, legacy_want)
    return out


def _is_subsequence(small, big):
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


def main():
    half = W.DTYPES[param("mixed_dtype", "float16")]
    bucket = int(param("traffic_bucket_bytes", 2 * 2**20))
    specs = traffic_specs(rng("traffic-shapes"), bucket, half)
    param_bytes = W.nbytes(specs)
    results, failure = W.run_all_ranks(traffic_rank, timeout=120, args=(specs, bucket))
    greedy = max(W.greedy_bucket_counts(specs, bucket).values())
    loc = W.syncer_location()

    with check("sync-bytes", "traffic", location=loc, requirements=["traffic-once", "dtype-kept"]) as c:
        if failure:
            raise failure
        c.measured.update(param_bytes=param_bytes, counted_by=results[0]["mode"], bucket_bytes=bucket)
        for label in ("first", "update"):
            moved = max(r[label]["bytes"] for r in results)
            c.measured[label + "_sync_bytes"] = moved
            if not param_bytes <= moved <= param_bytes + CONTROL_BYTES:
                c.fail("a sync of a model with %s of parameters moved %s per rank (%.2fx), by op %s; each "
                       "parameter byte should cross the wire exactly once per sync, in its own dtype"
                       % (W.mib(param_bytes), W.mib(moved), moved / param_bytes, results[0][label]["by_op"]))

    with check("sync-collective-calls", "traffic", location=loc,
               requirements=["traffic-one-broadcast-per-bucket", "speed-many-small"]) as c:
        if failure:
            raise failure
        calls = max(sum(r["first"]["calls"].values()) for r in results)
        allowed = greedy + 1 + CONTROL_CALLS
        c.measured.update(collective_calls=calls, allowed_calls=allowed, greedy_buckets=greedy,
                          parameters=len(specs))
        if calls > allowed:
            c.fail("one sync of %d tensors with bucket_bytes=%d issued %d collectives %s; %d buckets should "
                   "mean about %d broadcasts, one per bucket (plus the version)"
                   % (len(specs), bucket, calls, results[0]["first"]["calls"], greedy, greedy + 1))

    with check("skip-unchanged", "traffic", location=loc, requirements=["traffic-skip", "sync-skip-held"]) as c:
        if failure:
            raise failure
        moved = max(r["repeat"]["bytes"] for r in results)
        c.measured.update(repeat_sync_bytes=moved, allowed_bytes=CONTROL_BYTES)
        if moved > CONTROL_BYTES:
            c.fail("syncing a version the rollout ranks already hold moved %s (%s); it should move no weights, "
                   "only the version check" % (W.mib(moved), results[0]["repeat"]["by_op"]))

    with check("bucket-send-order", "structure", location=W.syncer_location("buckets"),
               requirements=["buckets-send-order"]) as c:
        if failure:
            raise failure
        sizes = dict(zip(results[0]["names"], (W.nbytes([s]) for s in specs)))
        plan = results[0]["buckets"]
        if any(nm not in sizes for b in plan for nm in b):
            c.skip("WeightSyncer.buckets names something that is not a parameter (probe_state says what)")
        expected = [sum(sizes[nm] for nm in b) for b in plan]
        seen = results[0]["first"]["payloads"]
        if not 0 <= len(seen) - len(expected) <= CONTROL_CALLS:
            c.skip("%d collectives for %d buckets: the order of buckets is judged only where each bucket is "
                   "one collective (sync-collective-calls judges the count)" % (len(seen), len(expected)))
        c.measured.update(buckets=len(expected), collectives=len(seen))
        if not _is_subsequence(expected, seen):
            c.fail("WeightSyncer.buckets lists buckets of %s bytes in that order, but the trainer's collectives "
                   "carried %s bytes: buckets must be listed in the order they are sent"
                   % (expected[:8], seen[:10]))

    n = int(param("gloo_ranks", 3))
    src = rng("fanout-src").randint(1, n - 1)
    fan_bucket = int(param("fanout_bucket_bytes", 200000))
    fan_specs = fanout_specs(rng("fanout-shapes"), fan_bucket, half)
    fan_bytes = W.nbytes(fan_specs)
    fan, fan_failure = W.run_all_ranks(fanout_rank, timeout=120, world_size=n, backend="gloo",
                                       args=(fan_specs, fan_bucket, src))
    setting = "%d gloo ranks, src=%d, bucket_bytes=%d" % (n, src, fan_bucket)

    with check("sync-many-ranks", "functional", location=loc,
               requirements=["exact-weights", "src-any-rank", "ctor-every-rank", "backends"]) as c:
        if fan_failure:
            raise fan_failure
        for r in fan:
            if r["diff"] or r["returns"] != [True, False] or r["version"] != 0:
                c.fail("with %s, syncing version 0 twice gave rank %d sync() results %r, version %r, weights: %s"
                       % (setting, r["rank"], r["returns"], r["version"],
                          "parameter '%s' %s" % (r["diff"]["name"], r["diff"]["detail"]) if r["diff"] else "equal"))

    with check("sync-bytes-many-ranks", "traffic", location=loc,
               requirements=["traffic-once", "traffic-skip"]) as c:
        if fan_failure:
            raise fan_failure
        first = max(r["bytes"][0] for r in fan)
        repeat = max(r["bytes"][1] for r in fan)
        worst = max(fan, key=lambda r: r["bytes"][0])
        c.measured.update(ranks=n, param_bytes=fan_bytes, first_sync_bytes=first, repeat_sync_bytes=repeat)
        if not fan_bytes <= first <= fan_bytes + CONTROL_BYTES:
            c.fail("with %s one sync moved %s on rank %d (%.2fx the %s of parameters); a broadcast moves each "
                   "parameter byte once whatever the number of rollout ranks"
                   % (setting, W.mib(first), worst["rank"], first / fan_bytes, W.mib(fan_bytes)))
        if repeat > CONTROL_BYTES:
            c.fail("with %s, re-syncing the held version moved %s; it should move no weights" % (setting, W.mib(repeat)))

    with check("sync-weights-kept", "functional", requirements=["sync-weights-kept"]) as c:
        if fan_failure:
            raise fan_failure
        for r in fan:
            if r["legacy_diff"] or r["legacy_version"] != 5:
                c.fail("sync_weights(model, 5, src=%d) on %d gloo ranks gave rank %d version %r, weights: %s"
                       % (src, n, r["rank"], r["legacy_version"],
                          "'%s' %s" % (r["legacy_diff"]["name"], r["legacy_diff"]["detail"])
                          if r["legacy_diff"] else "equal"))


if __name__ == "__main__":
    main()
