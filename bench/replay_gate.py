#!/usr/bin/env python3
"""Replays real merged PRs through a repository gate, as if an agent had opened each one.

The CLI does this now, from any folder and with no suite file: `probegate gate replay --repo MIRROR
--task T --shas ... | --since DATE | --count N` (docs/repository-gates.md, "Replaying merged PRs
through a gate"): the same result JSON per PR (<sha9>.json, so an --out-dir of this script resumes
there), a markdown table with generic key numbers, resumable, --inject PATCH... for regressions as
patches. This script stays for the suites' named injections and per-suite figures below, and to
reproduce bench/results/*-gate-replay.md as they were made.

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

What differs between gates lives beside this script, one module per suite in bench/gate_injections/
(verl.py, megatron.py): TASK (the task id it is for), WATCH (path prefixes for the changed-paths
column), INJECTIONS (the regressions --inject commits on top of a real PR) and key_numbers(probe)
(the table's figures). The suite is the one whose TASK is the --task folder's name, or --suite NAME.
"""
import argparse
import concurrent.futures as cf
import importlib
import json
import os
import pkgutil
import re
import subprocess
import sys
import time

SUITES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gate_injections")


def load_suite(task, name=None):
    """The suite module for --task (its TASK equals the task folder's name), or the one named."""
    sys.path.insert(0, os.path.dirname(SUITES_DIR))
    names = [m.name for m in pkgutil.iter_modules([SUITES_DIR])]
    if name:
        if name not in names:
            sys.exit(f"--suite {name}: no bench/gate_injections/{name}.py (there are: {', '.join(sorted(names))})")
        return importlib.import_module(f"gate_injections.{name}")
    task_id = os.path.basename(os.path.normpath(task))
    for n in sorted(names):
        mod = importlib.import_module(f"gate_injections.{n}")
        if getattr(mod, "TASK", None) == task_id:
            return mod
    sys.exit(f"no suite in bench/gate_injections/ has TASK = {task_id!r}: add one, or name it with --suite")


def git(mirror, *args):
    return subprocess.run(["git", "--git-dir", mirror, *args], check=True, capture_output=True, text=True).stdout.strip()


def evaluate(args, sha, repo=None, parent=None, tag=""):
    repo = repo or args.mirror
    full = git(args.mirror, "rev-parse", sha) if not tag else sha
    parent = parent or git(args.mirror, "rev-parse", f"{full}^1")
    out = os.path.join(args.out_dir, f"{tag}{full[:9]}.json")
    if not ((args.reuse or args.table_only) and os.path.exists(out)) and not args.table_only:
        t0 = time.time()
        cmd = ["node", "dist/cli/index.js", "eval", "--task", args.task, "--submission", f"{repo}@{full}",
               "--pr-base", parent, "--seed", str(args.seed), "--out", out, "--always-probe", *args.eval_args]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        with open(out + ".log", "w") as fh:
            fh.write(f"$ {' '.join(cmd)}\nexit {proc.returncode} after {time.time() - t0:.0f} s\n{proc.stdout}\n{proc.stderr}")
    return full, parent, out


def inject(clone, name, sha, injections):
    """Commits injection `name` on top of `sha` in the work-tree clone `clone`; returns the new sha."""
    run = lambda *a: subprocess.run(["git", "-C", clone, *a], check=True, capture_output=True, text=True).stdout.strip()
    run("checkout", "-q", "-B", f"inject/{name}", sha)
    for rel, old, new, *nth in injections[name][2]:
        path = os.path.join(clone, rel)
        with open(path) as fh:
            text = fh.read()
        n = nth[0] if nth else 1
        parts = text.split(old)
        if len(parts) <= n:
            raise SystemExit(f"injection {name}: {rel} at {sha[:9]} has fewer than {n} of {old!r}")
        with open(path, "w") as fh:
            fh.write(old.join(parts[:n]) + new + old.join(parts[n:]))
    run("-c", "user.name=replay", "-c", "user.email=replay@localhost", "commit", "-qam", f"inject {name}: {injections[name][1]}")
    return run("rev-parse", "HEAD")


def numbers(result, suite):
    """The key figures of one evaluation: test counts, the suite's key checks, failures."""
    nums, failed = [], []
    off = result.get("official") or {}
    if off.get("counts"):
        c = off["counts"]
        nums.append(f"tests {c['passed']}/{c['total']}")
    for p in result.get("probes", []):
        figure = suite.key_numbers(p)
        if figure:
            nums.append(figure)
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
    ap.add_argument("--suite", help="bench/gate_injections/NAME.py (default: the one whose TASK is --task's folder name)")
    ap.add_argument("--watch", nargs="*", default=None, help="path prefixes listed in the changed-paths column (default: the suite's WATCH)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1, help="evaluations at once")
    ap.add_argument("--eval-args", nargs="*", default=[], help="more arguments for each `probegate eval` (e.g. --python PATH --unsandboxed on the GPU machine)")
    ap.add_argument("--out-dir", default="/tmp/verl-gate-runs")
    ap.add_argument("--table", default="-")
    ap.add_argument("--reuse", action="store_true", help="keep result JSONs already in --out-dir")
    ap.add_argument("--table-only", action="store_true", help="evaluate nothing: tabulate the result JSONs already in --out-dir")
    ap.add_argument("--inject", nargs="*", default=[], metavar="NAME@SHA",
                    help="instead of a replay: commit injection NAME (the suite's INJECTIONS) on top of merge commit SHA in --clone "
                         "and evaluate it against the PR's base (SHA's first parent)")
    ap.add_argument("--clone", help="a work-tree clone of the mirror, for --inject (scratch branches inject/NAME)")
    args = ap.parse_args()
    suite = load_suite(args.task, args.suite)
    args.watch = args.watch if args.watch is not None else list(suite.WATCH)
    if args.inject:
        return main_inject(args, suite)
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
            nums, failed = numbers(result, suite)
            if result.get("reason") and verdict != "resolved":
                failed.append(result["reason"][:220])
        except (OSError, ValueError) as e:
            verdict, nums, failed = "not run", [], [] if args.table_only else [str(e)]
        esc = lambda t: t.replace("|", "\\|")
        lines.append(f"| {i} | {'#' + pr.group(1) if pr else ''} `{full[:9]}` (`{parent[:9]}`) | {esc(title[:90])} | "
                     f"{esc(', '.join(watched)) or '–'} ({len(watched)}/{len(changed)}) | **{verdict}** | {'; '.join(nums)} | {esc('<br>'.join(failed)) or '–'} |")
    text = "\n".join(lines) + "\n"
    if args.table == "-":
        sys.stdout.write(text)
    else:
        with open(args.table, "w") as fh:
            fh.write(text)


def main_inject(args, suite):
    """Evaluates each injected regression and prints one table row per injection."""
    if not args.clone:
        sys.exit("--inject needs --clone (a work-tree clone of --mirror)")
    os.makedirs(args.out_dir, exist_ok=True)
    lines = ["| injection | on top of | category expected | verdict | caught by (failed checks) | key numbers |", "|---|---|---|---|---|---|"]
    for spec in args.inject:
        name, sha = spec.split("@")
        full = git(args.mirror, "rev-parse", sha)
        if name not in suite.INJECTIONS:
            sys.exit(f"--inject {name}: the suite has {', '.join(suite.INJECTIONS)}")
        head = inject(args.clone, name, full, suite.INJECTIONS)
        _, parent, out = evaluate(args, head, repo=args.clone, parent=git(args.mirror, "rev-parse", f"{full}^1"), tag=f"inject-{name}-")
        with open(out) as fh:
            result = json.load(fh)
        nums, failed = numbers(result, suite)
        cat = suite.INJECTIONS[name][0]
        caught = [f for f in failed if f"({cat})" in f]
        title = git(args.mirror, "log", "-1", "--format=%s", full)
        esc = lambda t: t.replace("|", "\\|")
        lines.append(f"| {name}: {suite.INJECTIONS[name][1]} | `{full[:9]}` {esc(title[:60])} | {cat} | **{result['verdict']}** | "
                     f"{esc('<br>'.join(failed)) or '–'} {'(caught in its category)' if caught else '(NOT caught in its category)'} | {'; '.join(nums)} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.table == "-":
        sys.stdout.write(text)
    else:
        with open(args.table, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
