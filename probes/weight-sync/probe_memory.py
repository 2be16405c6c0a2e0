"""Memory check of WeightSyncer: the trainer stages at most about two buckets, never the model."""
import os

import torch

import _wsync_probe as W
from probegate_probe import check, device_for_rank, memory_record, param, rng

MODEL_TARGET = 48 * 2**20
SLACK = 6 * 2**20  # CPU RSS noise: interpreter, gloo and allocator pages (measured 0.5-3.5 MiB)


def memory_specs(r, bucket):
    """About 48 MiB of fp32 tensors of 30-50% of a bucket each: two or three per bucket."""
    specs, total = [], 0
    while total < MODEL_TARGET:
        numel = int(r.uniform(0.3, 0.5) * bucket) // 4
        specs.append((W.shape_of(numel, r), torch.float32))
        total += numel * 4
    return specs


def memory_rank(rank, world_size, specs, bucket):
    device = device_for_rank(rank)
    model = W.build(specs, seed=100 + rank, device=device)
    WeightSyncer = W.import_syncer()

    syncer = WeightSyncer(model, bucket_bytes=bucket, src=0)
    sync = (lambda v: syncer.sync(v)) if rank == 0 else (lambda v: syncer.sync())
    sync(1)  # first use sets up communication buffers; those are not what this check is about
    if rank == 0:
        g = torch.Generator(device=device).manual_seed(5)
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(generator=g)  # in place: no temporaries left to be reused
    torch.distributed.barrier()
    rec = memory_record(sync, 2, device=device)
    # The figure of record is what the process itself grew by: on CUDA the allocator's peak or the
    # driver's growth, whichever is larger (a staging buffer from cupy or raw cudaMalloc shows in the
    # second); on CPU the resident growth. Memory the sync touched also counts the model it reads,
    # so it is bounded separately, by the model plus the two buckets (a staging copy of the model
    # in scratch held since import touches twice the model).
    peak = max(rec.allocator_bytes or 0, rec.device_bytes or 0) if device.type == "cuda" else rec.rss_bytes
    return {"peak": peak, "record": rec.measured(), "touched": rec.touched_bytes}


def main():
    # A fixed mmap threshold stops glibc from serving large blocks out of memory freed earlier, so
    # the CPU figure (peak RSS growth) sees every large staging buffer the sync allocates.
    os.environ["MALLOC_MMAP_THRESHOLD_"] = str(256 * 1024)
    bucket = int(param("memory_bucket_bytes", 4 * 2**20))
    specs = memory_specs(rng("memory-shapes"), bucket)
    model_bytes, limit = W.nbytes(specs), 2 * bucket + SLACK
    results, failure = W.run_all_ranks(memory_rank, timeout=120, args=(specs, bucket))
    loc = W.syncer_location()

    with check("trainer-sync-peak-memory", "memory", location=loc, requirements=["memory-two-buckets"]) as c:
        if failure:
            raise failure
        peak = results[0]["peak"]
        c.measured.update(trainer_peak_bytes=peak, limit_bytes=limit, model_bytes=model_bytes,
                          bucket_bytes=bucket, rollout_peak_bytes=max(r["peak"] for r in results[1:]))
        record = results[0]["record"]
        c.measured.update({f"trainer_{k}": v for k, v in record.items() if k != "peak_bytes"})
        touched, touched_limit = results[0]["touched"], model_bytes + limit
        if touched is not None:
            c.measured["touched_limit_bytes"] = touched_limit
        if peak > limit:
            c.fail("during a sync of a %s model with bucket_bytes=%d the trainer's memory grew by %s, more "
                   "than %s (two buckets + %s); stage one bucket at a time instead of flattening the model"
                   % (W.mib(model_bytes), bucket, W.mib(peak), W.mib(limit), W.mib(SLACK)))
        if touched is not None and touched > touched_limit:
            c.fail("during a sync of a %s model with bucket_bytes=%d the trainer touched %s of memory, more than the "
                   "model it reads plus two buckets + %s (%s): it stages the model in memory it held before the "
                   "sync (scratch allocated earlier, outside the allocator); stage one bucket at a time"
                   % (W.mib(model_bytes), bucket, W.mib(touched), W.mib(SLACK), W.mib(touched_limit)))


if __name__ == "__main__":
    main()
