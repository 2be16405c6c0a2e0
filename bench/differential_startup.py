"""How much a differential probe (head against base) costs next to one side alone.

Runs, side by side in one process each and interleaved over --rounds:
  one-side   a probe process that imports torch and runs the scenario on 2 gloo ranks once (count mode)
  two-procs  the naive way: two such processes, one per tree
  shared     one probe process running differential() on both trees (the kit's forkserver has
             imported torch once; each side's ranks fork from it)
and prints wall seconds (median) and the ratios shared / one-side and two-procs / one-side.
Goal (issue 27): shared ≤ 1.3 × one-side.

  /usr/bin/python3 bench/differential_startup.py [--rounds 5] [--python /usr/bin/python3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

KIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "probes", "kit")
LIB = "import torch\nimport torch.distributed as dist\n\ndef step(t):\n    dist.all_reduce(t)\n    return t\n"
PROBE = textwrap.dedent('''
    import sys, torch
    from probegate_probe.differential import differential, _side_worker
    from probegate_probe.ranks import run_ranks

    def scenario(rank, world, rep):
        import pgdiff_target
        return pgdiff_target.step(torch.full((1 << 16,), float(rank + rep)))

    if __name__ == "__main__":
        mode, base, head = sys.argv[1], sys.argv[2], sys.argv[3]
        if mode == "shared":
            differential(scenario, world_size=2, base=base, head=head, measure=("traffic", "outputs"))
        else:
            run_ranks(_side_worker, 2, args=(base, head, scenario, "count", 0, ()))
''')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--python", default="/usr/bin/python3")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="pg-diff-bench-")
    for side in ("base", "head"):
        os.makedirs(os.path.join(tmp, side))
        with open(os.path.join(tmp, side, "pgdiff_target.py"), "w") as f:
            f.write(LIB)
    probe = os.path.join(tmp, "probe_diff.py")
    with open(probe, "w") as f:
        f.write(PROBE)
    env = {**os.environ, "PYTHONPATH": os.path.abspath(KIT), "PROBEGATE_WORKSPACE": os.path.join(tmp, "head")}
    base, head = os.path.join(tmp, "base"), os.path.join(tmp, "head")

    def run(mode, tree_a, tree_b):
        t0 = time.perf_counter()
        subprocess.run([args.python, probe, mode, tree_a, tree_b], check=True, env=env, cwd=tmp)
        return time.perf_counter() - t0

    times = {"one-side": [], "two-procs": [], "shared": []}
    for _ in range(args.rounds):
        times["one-side"].append(run("one", base, head))
        times["two-procs"].append(run("one", base, head) + run("one", head, base))
        times["shared"].append(run("shared", base, head))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{'mode':<10} {'median s':>9}  {'× one side':>10}   (rounds: {args.rounds}, python: {args.python})")
    for k in ("one-side", "two-procs", "shared"):
        print(f"{k:<10} {med[k]:9.2f}  {med[k] / med['one-side']:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
