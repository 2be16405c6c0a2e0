"""Memory check of WeightSyncer: the trainer stages at most about two buckets, never the model."""
import os

import torch

import _wsync_probe as W
from probegate_probe import check, device_for_rank, peak_memory

BUCKET = 4 * 2**20
SPECS = [((512, 1024), torch.float32)] * 32  # 64 MiB in 2 MiB tensors: two per bucket
MODEL_BYTES = W.nbytes(SPECS)
SLACK = 6 * 2**20  # CPU RSS noise: interpreter, gloo and allocator pages (measured 0.5-3.5 MiB)
LIMIT = 2 * BUCKET + SLACK


def memory_rank(rank, world_size):
    device = device_for_rank(rank)
    model = W.build(SPECS, seed=100 + rank, device=device)
    WeightSyncer = W.import_syncer()

    syncer = WeightSyncer(model, bucket_bytes=BUCKET, src=0)
    sync = (lambda v: syncer.sync(v)) if rank == 0 else (lambda v: syncer.sync())
    sync(1)  # first use sets up communication buffers; those are not what this check is about
    if rank == 0:
        g = torch.Generator(device=device).manual_seed(5)
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(generator=g)  # in place: no temporaries left to be reused
    torch.distributed.barrier()
    _, peak = peak_memory(sync, 2, device=device)
    return {"peak": peak}


def main():
    # A fixed mmap threshold stops glibc from serving large blocks out of memory freed earlier, so
    # the CPU figure (peak RSS growth) sees every large staging buffer the sync allocates.
    os.environ["MALLOC_MMAP_THRESHOLD_"] = str(256 * 1024)
    results, failure = W.run_all_ranks(memory_rank, timeout=120)
    loc = W.syncer_location()

    with check("trainer-sync-peak-memory", "memory", location=loc) as c:
        if failure:
            raise failure
        peak = results[0]["peak"]
        c.measured.update(trainer_peak_bytes=peak, limit_bytes=LIMIT, model_bytes=MODEL_BYTES,
                          bucket_bytes=BUCKET, rollout_peak_bytes=max(r["peak"] for r in results[1:]))
        if peak > LIMIT:
            c.fail("during a sync of a %s model with bucket_bytes=%s the trainer's memory grew by %s, more "
                   "than %s (two buckets + %s); stage one bucket at a time instead of flattening the model"
                   % (W.mib(MODEL_BYTES), W.mib(BUCKET), W.mib(peak), W.mib(LIMIT), W.mib(SLACK)))


if __name__ == "__main__":
    main()
