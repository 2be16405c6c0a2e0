#!/usr/bin/env python3
"""Replays real merged PRs through a repository gate, as if an agent had opened each one.

For every merge/squash commit given, the PR's base is its first parent and its head the commit
itself; `probegate eval --task T --submission MIRROR@SHA --pr-base PARENT --seed S` judges it.
Writes one result JSON per PR under --out-dir and a markdown table (PR, title, changed paths,
verdict, key numbers, failed checks) to --table; the explanation column is left for a person to
fill in from the PR's own title/description/code.

  python3 bench/replay_gate.py --mirror /work/.mirror/volcengine+verl/repo \
      --task tasks/verl-core-algos-gate --shas 5689fd799 97eac9048 ... --jobs 2 \
      --out-dir /tmp/verl-gate-runs --table /tmp/verl-gate-table.md

--shas-from-log PATHS... takes the first-parent history of main touching those paths instead
(newest first, --limit of them). Run from the probegate checkout after `node scripts/build.mjs`.
"""
import argparse
import concurrent.futures as cf
import json
import os
import re
import subprocess
import sys
import time


def git(mirror, *args):
    return subprocess.run(["git", "--git-dir", mirror, *args], check=True, capture_output=True, text=True).stdout.strip()


def evaluate(args, sha):
    full = git(args.mirror, "rev-parse", sha)
    parent = git(args.mirror, "rev-parse", f"{full}^1")
    out = os.path.join(args.out_dir, f"{full[:9]}.json")
    if not (args.reuse and os.path.exists(out)):
        t0 = time.time()
        cmd = ["node", "dist/cli/index.js", "eval", "--task", args.task, "--submission", f"{args.mirror}@{full}",
               "--pr-base", parent, "--seed", str(args.seed), "--out", out, "--always-probe"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        with open(out + ".log", "w") as fh:
            fh.write(f"$ {' '.join(cmd)}\nexit {proc.returncode} after {time.time() - t0:.0f} s\n{proc.stdout}\n{proc.stderr}")
    return full, parent, out


def numbers(result):
    """The key figures of one evaluation: test counts, memory and time of the step, failures."""
    nums, failed = [], []
    off = result.get("official") or {}
    if off.get("counts"):
        c = off["counts"]
        nums.append(f"tests {c['passed']}/{c['total']}")
    for p in result.get("probes", []):
        m = p.get("measured") or {}
        if p["id"] == "step-peak-memory" and "head_peak_bytes" in m:
            nums.append(f"peak {m['head_peak_bytes'] / 2**20:.0f}/{m['base_peak_bytes'] / 2**20:.0f} MiB")
        if p["id"] == "step-time" and "time_ratio" in m:
            nums.append(f"time ×{m['time_ratio']:.2f} (p={m['rank_test_p']:.2f})")
        if p["id"] == "distributed-reduction-traffic" and "head_bytes_per_step" in m:
            nums.append(f"traffic {m['head_bytes_per_step']:.0f}/{m['base_bytes_per_step']:.0f} B")
        if p["status"] not in ("passed", "skipped"):
            failed.append(f"{p['id']} ({p['category']}): {p.get('message', '')[:220]}")
    outs = [p for p in result.get("probes", []) if p["id"].startswith("outputs.")]
    if outs:
        nums.append(f"outputs {sum(p['status'] == 'passed' for p in outs)}/{len(outs)} bitwise")
    return nums, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirror", required=True, help="bare git mirror (or clone) holding the commits")
    ap.add_argument("--task", required=True)
    ap.add_argument("--shas", nargs="*", default=[])
    ap.add_argument("--shas-from-log", nargs="*", default=[], help="paths: take first-parent commits of HEAD touching them")
    ap.add_argument("--limit", type=int, default=25)
    ap.add_argument("--watch", nargs="*", default=["verl/trainer/ppo/core_algos.py", "verl/utils/torch_functional.py", "tests/"],
                    help="path prefixes listed in the changed-paths column")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1, help="evaluations at once")
    ap.add_argument("--out-dir", default="/tmp/verl-gate-runs")
    ap.add_argument("--table", default="-")
    ap.add_argument("--reuse", action="store_true", help="keep result JSONs already in --out-dir")
    args = ap.parse_args()
    shas = list(args.shas)
    if args.shas_from_log:
        shas += git(args.mirror, "log", "--first-parent", "--format=%H", f"-{args.limit}", "HEAD", "--", *args.shas_from_log).split()
    if not shas:
        sys.exit("give --shas or --shas-from-log")
    os.makedirs(args.out_dir, exist_ok=True)
    rows = {}
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        futs = {pool.submit(evaluate, args, s): s for s in shas}
        for fut in cf.as_completed(futs):
            full, parent, out = fut.result()
            rows[futs[fut]] = (full, parent, out)
            print(f"done {full[:9]}", file=sys.stderr, flush=True)
    lines = ["| # | PR / sha (base) | title | changed paths (watched / all) | verdict | key numbers | failed checks |",
             "|---|---|---|---|---|---|---|"]
    for i, s in enumerate(shas, 1):
        full, parent, out = rows[s]
        title = git(args.mirror, "log", "-1", "--format=%s", full)
        pr = re.search(r"\(#(\d+)\)\s*$", title)
        changed = git(args.mirror, "diff", "--name-only", parent, full).split()
        watched = [p for p in changed if any(p.startswith(w) for w in args.watch)]
        try:
            with open(out) as fh:
                result = json.load(fh)
            verdict = result["verdict"]
            nums, failed = numbers(result)
            if result.get("reason") and verdict != "resolved":
                failed.append(result["reason"][:220])
        except (OSError, ValueError) as e:
            verdict, nums, failed = "no result", [], [str(e)]
        esc = lambda t: t.replace("|", "\\|")
        lines.append(f"| {i} | {'#' + pr.group(1) if pr else ''} `{full[:9]}` (`{parent[:9]}`) | {esc(title[:90])} | "
                     f"{esc(', '.join(watched)) or '–'} ({len(watched)}/{len(changed)}) | **{verdict}** | {'; '.join(nums)} | {esc('<br>'.join(failed)) or '–'} |")
    text = "\n".join(lines) + "\n"
    if args.table == "-":
        sys.stdout.write(text)
    else:
        with open(args.table, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
