"""Traffic checks of WeightSyncer: each parameter byte once per sync, one collective per bucket,
nothing when the rollout ranks are already up to date."""
import torch

import _wsync_probe as W
from probegate_probe import CollectiveCounter, check, device_for_rank

F32, F16 = torch.float32, torch.float16
BUCKET = 4 * 2**20
# 2.5 MiB tensors sit one per bucket; the 4 KiB tensors show whether a bucket really is one collective.
SPECS = [((640, 1024), F32)] * 16 + [((32, 32), F32)] * 256 + [((256, 512), F16)] * 8
PARAM_BYTES = W.nbytes(SPECS)
CONTROL_BYTES = 1024  # the version header and the like
CONTROL_CALLS = 2


def traffic_rank(rank, world_size):
    device = device_for_rank(rank)
    model = W.build(SPECS, seed=100 + rank, device=device)
    WeightSyncer = W.import_syncer()

    syncer = WeightSyncer(model, bucket_bytes=BUCKET, src=0)

    def sync(version):
        return syncer.sync(version) if rank == 0 else syncer.sync()

    out = {}
    for label, version in (("first", 1), ("repeat", 1), ("update", 2)):
        if label == "update" and rank == 0:
            g = torch.Generator(device=device).manual_seed(7)
            with torch.no_grad():
                for p in model.parameters():
                    p.normal_(generator=g)
        with CollectiveCounter() as counter:
            sync(version)
        out[label] = {"bytes": counter.total_bytes, "calls": dict(counter.calls), "by_op": counter.by_op}
        out["mode"] = counter.mode
    return out


def main():
    results, failure = W.run_all_ranks(traffic_rank, timeout=120)
    greedy = W.greedy_bucket_count(SPECS, BUCKET)
    loc = W.syncer_location()

    with check("sync-bytes", "traffic", location=loc) as c:
        if failure:
            raise failure
        c.measured.update(param_bytes=PARAM_BYTES, counted_by=results[0]["mode"])
        for label in ("first", "update"):
            moved = max(r[label]["bytes"] for r in results)
            c.measured[label + "_sync_bytes"] = moved
            if not PARAM_BYTES <= moved <= PARAM_BYTES + CONTROL_BYTES:
                c.fail("a sync of a model with %s of parameters moved %s per rank (%.2fx), by op %s; each "
                       "parameter byte should cross the wire exactly once per sync, in its own dtype"
                       % (W.mib(PARAM_BYTES), W.mib(moved), moved / PARAM_BYTES, results[0][label]["by_op"]))

    with check("sync-collective-calls", "traffic", location=loc) as c:
        if failure:
            raise failure
        calls = max(sum(r["first"]["calls"].values()) for r in results)
        allowed = greedy + 1 + CONTROL_CALLS
        c.measured.update(collective_calls=calls, allowed_calls=allowed, greedy_buckets=greedy,
                          parameters=len(SPECS))
        if calls > allowed:
            c.fail("one sync of %d tensors with bucket_bytes=%s issued %d collectives %s; %d buckets should "
                   "mean about %d broadcasts, one per bucket (plus the version)"
                   % (len(SPECS), W.mib(BUCKET), calls, results[0]["first"]["calls"], greedy, greedy + 1))

    with check("skip-unchanged", "traffic", location=loc) as c:
        if failure:
            raise failure
        moved = max(r["repeat"]["bytes"] for r in results)
        c.measured.update(repeat_sync_bytes=moved, allowed_bytes=CONTROL_BYTES)
        if moved > CONTROL_BYTES:
            c.fail("syncing a version the rollout ranks already hold moved %s (%s); it should move no weights, "
                   "only the version check" % (W.mib(moved), results[0]["repeat"]["by_op"]))


if __name__ == "__main__":
    main()
