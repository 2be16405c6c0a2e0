"""GPU memory of record vs what the memory probes saw, on a real GPU.

    python3 bench/gpu_memory_of_record.py [--node node] [--out DIR] [task:submission ...]

Evaluates each submission through `probegate eval` with NCCL on one GPU (world size 1), one at a
time (the GPU is the job's alone, so the driver's figure is this job's), and prints one row per
evaluation: the engine's GPU memory of record per phase (nvidia-smi, outside the sandbox, above the
phase's starting point) beside the allocator figures the task's memory probe reported from inside.
The outside figure includes what the allocator never sees (CUDA context, cuBLAS workspace, NCCL
buffers), so it is the larger; a memory flaw must show in both.
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024
DEFAULT = [
    "paged-kv-cache:reference", "paged-kv-cache:heads-replicated",
    "sharded-optimizer:reference", "sharded-optimizer:replicated-state",
    "weight-sync:reference", "weight-sync:full-flatten",
]


def mib(b):
    return "–" if b is None else f"{b / MIB:.1f}"


def probe_bytes(result):
    """The largest byte figure a memory check reported (its own allocator or RSS peak)."""
    best = None
    for p in result["probes"]:
        if p["category"] != "memory":
            continue
        for k, v in (p.get("measured") or {}).items():
            if k.endswith("bytes") and isinstance(v, (int, float)) and not k.startswith(("expected", "limit", "budget")):
                best = v if best is None else max(best, v)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="*", default=DEFAULT)
    ap.add_argument("--node", default="node")
    ap.add_argument("--out", default=None, help="folder for each evaluation's result JSON")
    a = ap.parse_args()
    out = Path(a.out) if a.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    print("| task | submission | verdict | GPU official MiB | GPU probes MiB | samples | probe's own memory figure MiB | s |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for run in a.runs:
        task, sub = run.split(":")
        t0 = time.time()
        r = subprocess.run([a.node, str(ROOT / "dist/cli/index.js"), "eval", "--task", str(ROOT / "tasks" / task),
                            "--submission", str(ROOT / "examples/submissions" / task / f"{sub}.patch"),
                            "--world-size", "1", "--format", "json"], capture_output=True, text=True)
        secs = time.time() - t0
        try:
            res = json.loads(r.stdout)
        except json.JSONDecodeError:
            print(f"| {task} | {sub} | no result (exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}) | | | | | {secs:.1f} |", flush=True)
            continue
        if out:
            (out / f"{task}-{sub}.json").write_text(json.dumps(res, indent=1))
        g = res.get("gpuMemory") or {}
        off, pro = g.get("official") or {}, g.get("probes") or {}
        cats = sorted({p["category"] for p in res["probes"] if p["status"] == "failed"})
        verdict = res["verdict"] + (f" [{', '.join(cats)}]" if cats else "")
        samples = (off.get("samples") or 0) + (pro.get("samples") or 0)
        print(f"| {task} | {sub} | {verdict} | {mib(off.get('peakBytes'))} | {mib(pro.get('peakBytes'))} | {samples} | {mib(probe_bytes(res))} | {secs:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
