"""State and functional checks of WeightSyncer: exact weights, in-place update, versions, plan."""
import torch

import _wsync_probe as W
from probegate_probe import check, device_for_rank

F32, F16 = torch.float32, torch.float16
BUCKET = 64 * 1024
# Mixed dtypes, a 0-d and 1-d tensor, many tensors per bucket, and one tensor (256 KiB) larger than a
# bucket: every shape a bucketing scheme has to get right.
SPECS = ([((64, 48), F32), ((48,), F32)] * 6 + [((), F32), ((256, 256), F32), ((7, 33), F32)]
         + [((128, 96), F16), ((96,), F16)] * 4 + [((300,), F32)])
SMALL = [((40, 40), F32), ((40,), F32), ((17, 3), F16)]
V1, V2, V_OTHER = 3, 4, 9


def state_rank(rank, world_size):
    device = device_for_rank(rank)
    src, other_src = 0, world_size - 1
    # Expectations first: nothing here may depend on code the submission could have patched.
    first, second, other = W.values(SPECS, 11), W.values(SPECS, 12), W.values(SMALL, 13)
    model = W.build(SPECS, seed=100 + rank, device=device)  # rollouts start from different weights
    small = W.build(SMALL, seed=200 + rank, device=device)
    if rank == src:
        W.load(model, first)
    if rank == other_src:
        W.load(small, other)
    WeightSyncer = W.import_syncer()

    def do_sync(syncer, version, is_src):
        return syncer.sync(version) if is_src else syncer.sync()

    out = {"rank": rank, "names": [n for n, _ in model.named_parameters()]}
    before = [(n, id(p), p.data_ptr()) for n, p in model.named_parameters()]
    syncer = WeightSyncer(model, bucket_bytes=BUCKET, src=src)
    out["buckets"] = [list(b) for b in syncer.buckets]
    out["v0"] = syncer.version
    out["returns"], out["versions"], out["diffs"] = [], [], []
    for version, want in ((V1, first), (V2, second), (V2, second)):
        if rank == src and want is second:
            W.load(model, second)  # stands in for an optimizer step (in place)
        out["returns"].append(do_sync(syncer, version, rank == src))
        out["versions"].append(syncer.version)
        out["diffs"].append(W.first_difference(model, want))
    after = {n: (id(p), p.data_ptr()) for n, p in model.named_parameters()}
    out["moved"] = [n for n, pid, ptr in before if after.get(n) != (pid, ptr)]
    other_syncer = WeightSyncer(small, bucket_bytes=BUCKET, src=other_src)
    out["other_return"] = do_sync(other_syncer, V_OTHER, rank == other_src)
    out["other_version"] = other_syncer.version
    out["other_diff"] = W.first_difference(small, other)
    return out


def main():
    results, failure = W.run_all_ranks(state_rank, timeout=120)
    rollouts = [r for r in (results or []) if r["rank"] != 0]

    with check("sync-bitwise", "state", location=W.syncer_location("sync")) as c:
        if failure:
            raise failure
        bad = [(r["rank"], i, d) for r in results for i, d in enumerate(r["diffs"]) if d]
        c.measured.update(ranks=len(results), parameters=len(SPECS), mismatches=len(bad))
        if bad:
            rank, i, d = bad[0]
            who = "the trainer's own" if rank == 0 else "rank %d's" % rank
            c.fail("after sync #%d, %s parameter '%s' %s: every rank must hold the trainer's weights bit "
                   "for bit, in their own dtype, and the trainer's weights must stay untouched"
                   % (i + 1, who, d["name"], d["detail"]))

    with check("sync-in-place", "state", location=W.syncer_location("sync")) as c:
        if failure:
            raise failure
        moved = [(r["rank"], n) for r in rollouts for n in r["moved"]]
        c.measured.update(replaced_parameters=len(moved), parameters=len(SPECS))
        if moved:
            rank, name = moved[0]
            c.fail("WeightSyncer.sync() gave %d rollout parameter(s) new tensors or new storage (first: "
                   "'%s' on rank %d); copy the received bucket into the existing parameters in place, "
                   "code holding pointers to them (CUDA graphs) keeps reading stale weights"
                   % (len(moved), name, rank))

    with check("version-tracking", "state", location=W.syncer_location("version")) as c:
        if failure:
            raise failure
        want_returns, want_versions = [True, True, False], [V1, V2, V2]
        for r in results:
            if r["v0"] != -1:
                c.fail("WeightSyncer.version is %r on rank %d before any sync, expected -1" % (r["v0"], r["rank"]))
            if list(r["returns"]) != want_returns or list(r["versions"]) != want_versions:
                c.fail("syncing versions %s gave sync() results %s and versions %s on rank %d, expected %s "
                       "and %s (a repeated version is skipped, every rank reports the version it holds)"
                       % ([V1, V2, V2], r["returns"], r["versions"], r["rank"], want_returns, want_versions))

    with check("sync-from-other-src", "functional", location=W.syncer_location("sync")) as c:
        if failure:
            raise failure
        for r in results:
            if r["other_diff"] or r["other_version"] != V_OTHER or r["other_return"] is not True:
                c.fail("with src=%d (not rank 0), rank %d got sync()=%r, version %r, weights: %s"
                       % (len(results) - 1, r["rank"], r["other_return"], r["other_version"],
                          "parameter '%s' %s" % (r["other_diff"]["name"], r["other_diff"]["detail"])
                          if r["other_diff"] else "equal"))

    with check("bucket-plan", "functional", location=W.syncer_location("buckets")) as c:
        if failure:
            raise failure
        plan, names = results[0]["buckets"], results[0]["names"]
        sizes = {n: W.nbytes([s]) for n, s in zip(names, SPECS)}
        flat = [n for b in plan for n in b]
        greedy = W.greedy_bucket_count(SPECS, BUCKET)
        c.measured.update(buckets=len(plan), greedy_buckets=greedy, bucket_bytes=BUCKET)
        if sorted(flat) != sorted(names):
            missing = sorted(set(names) - set(flat))
            c.fail("WeightSyncer.buckets must list every parameter exactly once; missing %s, %d entries "
                   "for %d parameters" % (missing[:3], len(flat), len(names)))
        over = [b for b in plan if len(b) > 1 and sum(sizes[n] for n in b) > BUCKET]
        if over:
            c.fail("a bucket of %d parameters holds %d bytes, more than bucket_bytes=%d"
                   % (len(over[0]), sum(sizes[n] for n in over[0]), BUCKET))
        if len(plan) > greedy + 1:
            c.fail("%d buckets for a model an in-order greedy packing fits in %d" % (len(plan), greedy))
        if any(r["buckets"] != plan for r in results):
            c.fail("ranks computed different bucket plans for the same architecture")


if __name__ == "__main__":
    main()
