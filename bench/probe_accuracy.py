"""Probe accuracy: do the probe kit's meters measure what they claim?

  /usr/bin/python3 bench/probe_accuracy.py [--ranks 2 4] [--repeats N --node node --jobs J --log FILE]

A. traffic: bytes the CollectiveCounter counts vs the analytic wire bytes, per op, per world size
   (goal: exact);
B. memory: peak_memory() of a known allocation vs its size (goal: within 1 MiB on GPU; on CPU the
   figure is peak RSS growth, reported for reference);
C. verdict stability (with --repeats N): every example submission evaluated N times through
   `probegate eval`; the reference must pass every time, each flawed one must be caught every time.
D. probe power (with --power N): per task, `probegate validate --power --runs N --format json`:
   the probes x submissions matrix, and false rejections over N runs of each correct submission
   (reference and alternatives), every example once and then the correct ones round by round until
   N or --seconds. Reports go to --power-log DIR as JSON; reports already there (an earlier call) are
   merged in, so the runs can be spread over several calls with a time limit. --power-correct-only
   evaluates only the correct examples (`validate --correct-only`), for the calls after a full one:
   their runs add to the correct columns; the flawed columns come from the full reports only.
Prints markdown tables for bench/RESULTS.md.
"""
import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "probes" / "kit"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from probegate_probe import CollectiveCounter, device_for_rank, peak_memory, run_ranks  # noqa: E402

MIB = 2**20


def traffic_rank(rank, n):
    dev = device_for_rank(rank)
    S = 4 * MIB  # bytes per payload: 1 Mi float32 elements
    x = torch.ones(S // 4, device=dev)
    rows = []

    def measure(name, expected, fn):
        with CollectiveCounter() as c:
            fn()
        rows.append((name, c.total_bytes, int(expected), c.mode))

    measure("all_reduce", 2 * (n - 1) / n * S, lambda: dist.all_reduce(x))
    measure("all_gather (list)", (n - 1) / n * S * n, lambda: dist.all_gather([torch.empty_like(x) for _ in range(n)], x))
    measure("broadcast", S, lambda: dist.broadcast(x, src=0))
    measure("all_to_all_single", (n - 1) / n * S, lambda: dist.all_to_all_single(torch.empty_like(x), x))

    def p2p():
        peer = rank ^ 1
        if peer < n:
            ops = [dist.P2POp(dist.isend, x, peer), dist.P2POp(dist.irecv, torch.empty_like(x), peer)]
            for r in dist.batch_isend_irecv(ops):
                r.wait()

    measure("batch_isend_irecv (send+recv)", 2 * S if (rank ^ 1) < n else 0, p2p)
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256)).to(dev)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev.index] if dev.type == "cuda" else None)
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())

    def ddp_step():
        ddp(torch.randn(16, 512, device=dev)).sum().backward()

    measure("DDP step (reducer, C++)", 2 * (n - 1) / n * grad_bytes, ddp_step)
    return rows


def traffic(ranks):
    print("\n### A. Traffic: counted vs analytic wire bytes per rank (rank 0)\n")
    print("| ranks | op | counted bytes | analytic bytes | counted/analytic | counter mode |")
    print("|---:|---|---:|---:|---:|---|")
    exact = True
    for n in ranks:
        rows = run_ranks(traffic_rank, world_size=n, backend="gloo")[0]
        for name, got, want, mode in rows:
            ratio = got / want if want else float("nan")
            exact &= got == want
            print(f"| {n} | {name} | {got:,} | {want:,} | {ratio:.4f} | {mode} |")
    return exact


def memory():
    print("\n### B. Memory: peak_memory() of a known allocation\n")
    print("| device | allocated | measured peak | difference |")
    print("|---|---:|---:|---:|")
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    worst_gpu = 0
    for d in devices:
        for mib in (16, 256):
            def alloc():
                t = torch.ones(mib * MIB // 4, device=d)
                return float(t[0])
            _, peak = peak_memory(alloc, device=torch.device(d))
            diff = peak - mib * MIB
            if d == "cuda":
                worst_gpu = max(worst_gpu, abs(diff))
            print(f"| {d} | {mib} MiB | {peak / MIB:.2f} MiB | {diff / MIB:+.2f} MiB |")
    return worst_gpu


def load_yaml(path, node):
    """PyYAML where Python has it; otherwise the project's own YAML parser through Node."""
    try:
        import yaml
    except ImportError:
        js = "import{parse}from'yaml';import{readFileSync}from'fs';console.log(JSON.stringify(parse(readFileSync(process.argv[1],'utf8'))))"
        out = subprocess.run([node, "--input-type=module", "-e", js, str(path)], cwd=ROOT, check=True, capture_output=True, text=True)
        return json.loads(out.stdout)
    return yaml.safe_load(path.read_text())


def outcome_of(result):
    cats = sorted({p["category"] for p in result["probes"] if p["status"] == "failed"})
    return f'{result["verdict"]}{"[" + ",".join(cats) + "]" if cats else ""}'


def repeats(n, node, tasks, jobs, log_path, eval_args, deadline):
    """Evaluates every example n times, `jobs` at a time. Each evaluation is appended to the log as
    one JSON line as soon as it ends, and evaluations already in the log are not run again, so a
    run cut short (a device call has a time limit) resumes where it stopped."""
    import threading
    from itertools import zip_longest
    from concurrent.futures import ThreadPoolExecutor

    cli = str(ROOT / "dist" / "cli" / "index.js")
    wanted, todo = {}, []
    done = Counter()
    log = Path(log_path) if log_path else None
    if log and log.exists():
        for line in log.read_text().splitlines():
            if line.strip():
                e = json.loads(line)
                done[(e["task"], e["submission"])] += 1
    for task in tasks:
        exp_file = ROOT / "examples" / "submissions" / task / "expected.yml"
        for entry in load_yaml(exp_file, node):
            key = (task, entry["submission"])
            cats = sorted(entry.get("failedCategories", []))
            wanted[key] = entry["verdict"] + ("[" + ",".join(cats) + "]" if cats else "")
            todo.append([(task, exp_file.parent / entry["submission"])] * max(0, n - done[key]))
    # Round-robin over the submissions so a run cut short still covers each of them about evenly.
    todo = [item for rnd in zip_longest(*todo) for item in rnd if item is not None]
    lock = threading.Lock()
    entries = []

    def one(item):
        task, sub = item
        if time.time() > deadline:
            return
        t0 = time.time()
        r = subprocess.run([node, cli, "eval", "--task", str(ROOT / "tasks" / task), "--submission", str(sub),
                            "--format", "json", *eval_args], capture_output=True, text=True)
        try:
            got = outcome_of(json.loads(r.stdout))
        except json.JSONDecodeError:
            got = f"no-result(exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]})"
        e = {"task": task, "submission": sub.name, "outcome": got, "seconds": round(time.time() - t0, 1)}
        with lock:
            entries.append(e)
            if log:
                with log.open("a") as f:
                    f.write(json.dumps(e) + "\n")

    print(f"\n### C. Verdict stability: each example evaluated {n} times through `probegate eval` ({jobs} at a time)\n")
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, todo))
    everything = [json.loads(l) for l in log.read_text().splitlines() if l.strip()] if log and log.exists() else entries
    print("| task | submission | expected | outcomes | as expected | median s |")
    print("|---|---|---|---|---:|---:|")
    for (task, sub), want in wanted.items():
        mine = [e for e in everything if e["task"] == task and e["submission"] == sub]
        got = Counter(e["outcome"] for e in mine)
        secs = sorted(e["seconds"] for e in mine)
        med = f"{secs[len(secs) // 2]:.1f}" if secs else "–"
        print(f"| {task} | {sub} | {want} | {dict(got)} | {got[want]}/{len(mine)} | {med} |", flush=True)


def power(n, node, tasks, jobs, log_dir, deadline, power_args, merge_only=False, grace=150, correct_only=False):
    """Runs `probegate validate --power` on every task at once (the jobs shared between them), keeps
    each JSON report in log_dir, and prints every task's merged matrix and false rejections. With
    correct_only, validate evaluates only the correct examples (`--correct-only`): more runs for the
    false rejections, merged with the flawed columns of the full reports already in log_dir.
    n is the goal per correct submission over all calls: each task runs what its least-run correct
    submission lacks of n in the reports already in log_dir (with correct_only, a task that has n
    of each is not run again), and the jobs are shared in proportion to the evaluations each task
    still needs."""
    from concurrent.futures import ThreadPoolExecutor

    cli = str(ROOT / "dist" / "cli" / "index.js")
    log = Path(log_dir)
    log.mkdir(parents=True, exist_ok=True)

    def reports_of(task):
        """The task's reports of the newest report's probe set (they merge), and how many of older sets were left out."""
        files = sorted(log.glob(f"power-{task}-*.json"))
        if not files:
            return [], 0
        def probe_set(f):
            try:
                return json.loads(f.read_text()).get("probeSet")
            except (ValueError, AttributeError) as e:
                sys.exit(f"probe_accuracy: {f} is not a power report (probegate validate --power --format json): {e}")
        sets = {f: probe_set(f) for f in files}
        newest = sets[max(files, key=lambda f: f.stat().st_mtime)]
        mine = [f for f in files if sets[f] == newest]
        return mine, len(files) - len(mine)

    def correct_runs(files):
        """Runs so far of each correct submission in these reports, merged by `probegate merge-power`."""
        if not files:
            return {}
        r = subprocess.run([node, cli, "merge-power", *map(str, files), "--format", "json"], capture_output=True, text=True)
        if r.returncode not in (0, 1):  # 1: merged, validation failed; else the reports could not be read
            sys.exit(f"probe_accuracy: merge-power could not merge {len(files)} report(s) in {files[0].parent} (exit {r.returncode}): {r.stderr.strip()}")
        return {c["submission"]: c["runs"] for m in json.loads(r.stdout) for c in m["columns"] if c["correct"]}

    # What each task still needs: the goal less the runs of its least-run correct submission (a full
    # call evaluates the flawed examples once however many correct runs there are).
    so_far = {t: correct_runs(reports_of(t)[0]) for t in tasks} if not merge_only else {}
    need = {t: max(0 if correct_only else 1, n - min(so_far[t].values(), default=0)) for t in so_far}
    todo = [t for t in tasks if need.get(t)]
    weight = {t: need[t] * max(1, len(so_far[t])) for t in todo}
    share = {t: max(1, int(jobs * weight[t] / sum(weight.values()))) for t in todo}
    for t in sorted(todo, key=lambda t: jobs * weight[t] / sum(weight.values()) - share[t], reverse=True):
        if sum(share.values()) >= jobs:
            break
        share[t] += 1  # the rounding's remainder, to the tasks it shorted most
    stamp = time.strftime("%Y%m%dT%H%M%S")
    # Every task's validate process is given every core: they claim cores across processes (a job
    # waits for a core another process holds), so a task whose evaluations end sooner leaves its
    # cores to the others instead of idling a fixed share.
    cpus = sorted(os.sched_getaffinity(0))

    def one(task):
        left = deadline - time.time()
        if left < 1:
            return task, "no time left"
        t0 = time.time()
        progress = log / f"power-{task}-{stamp}.stderr"  # written as it goes: `tail -f` shows which run is evaluating
        # validate starts no evaluation after --budget; those in flight get `grace` seconds to end.
        # Past that it is sent SIGTERM: it stops at once and still prints the report of the
        # evaluations that finished (only those in flight are lost).
        budget = [] if left == float("inf") else ["--budget", str(max(1, int(left)))]
        cut = ""
        with progress.open("w") as err:
            p = subprocess.Popen([node, cli, "validate", "--power", str(ROOT / "tasks" / task), "--runs", str(need[task]), "--jobs", str(share[task]),
                                  "--cores", ",".join(map(str, cpus)),
                                  "--format", "json", *(["--correct-only"] if correct_only else []), *budget, *power_args],
                                 stdout=subprocess.PIPE, stderr=err, text=True)
            try:
                out, _ = p.communicate(timeout=None if left == float("inf") else left + grace)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGTERM)
                cut = f"interrupted at the time limit after {time.time() - t0:.0f}s; "
                try:
                    out, _ = p.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.communicate()
                    return task, f"cut off after {time.time() - t0:.0f}s (did not stop on SIGTERM); nothing recorded for this call"
        try:
            reports = json.loads(out)
        except json.JSONDecodeError:
            return task, f"{cut}no report (exit {p.returncode}): {progress.read_text().strip().splitlines()[-1:]}"
        for rep in reports:
            (log / f"power-{rep['task']}-{stamp}.json").write_text(json.dumps(rep, indent=1))
        return task, f"{cut}exit {p.returncode} in {time.time() - t0:.0f}s"

    flag = " --correct-only" if correct_only else ""
    print(f"\n### D. Probe power: `probegate validate --power{flag}` per task, up to {n} runs of each correct submission over all calls ({len(todo)} of {len(tasks)} tasks at once)\n")
    if merge_only:
        print(f"(no evaluations: the reports already in {log} merged)")
    else:
        for task in tasks:
            if task not in todo:
                print(f"- {task}: {n} runs of each correct submission already in {log}; not run")
        with ThreadPoolExecutor(max_workers=max(1, len(todo))) as pool:
            for task, status in pool.map(one, todo):
                print(f"- {task}: --runs {need[task]} (had {min(so_far[task].values(), default=0)}), {share[task]} evaluations at a time: {status}")
    covered = []
    for task in tasks:
        mine, older = reports_of(task)
        if not mine:
            print(f"\n#### {task}: no report yet")
            continue
        newest = json.loads(mine[0].read_text()).get("probeSet")
        print(f"\n#### {task}: {len(mine)} report(s) of probe set {str(newest)[:19]} merged"
              + (f"; {older} of older probe sets left out" if older else "") + "\n", flush=True)
        # `probegate merge-power` judges the summed matrix as validate judges one (src/core/probe-power/probe-power.ts).
        merge = [node, cli, "merge-power", *map(str, mine)]
        md = subprocess.run([*merge, "--format", "markdown"], capture_output=True, text=True)
        if md.returncode not in (0, 1):
            print(f"merge-power failed (exit {md.returncode}): {md.stderr.strip()}")
            continue
        print(md.stdout.replace("### ", "##### ", 1), flush=True)
        merged = json.loads(subprocess.run([*merge, "--format", "json"], capture_output=True, text=True).stdout)
        covered += [(task, c["submission"], c["runs"]) for m in merged for c in m["columns"] if c["correct"]]
    if covered:
        least = min(covered, key=lambda x: x[2])
        goal = f"goal {n}; " if n else ""
        print(f"\ncovered: {len(covered)} correct submissions of {len(tasks)} tasks, {least[2]}–{max(x[2] for x in covered)} runs each "
              f"({goal}fewest: {least[0]}/{least[1]}); {sum(x[2] for x in covered)} correct-submission runs in all")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--repeats", type=int, default=0)
    ap.add_argument("--node", default="node")
    ap.add_argument("--tasks", nargs="+", default=["sharded-optimizer", "paged-kv-cache", "weight-sync"])
    ap.add_argument("--jobs", type=int, default=1, help="evaluations at a time (C; D shares them between the tasks)")
    ap.add_argument("--log", help="JSON-lines log of evaluations (C); evaluations already in it are not re-run")
    ap.add_argument("--seconds", type=float, default=float("inf"), help="start no evaluation after this many seconds (C, D)")
    ap.add_argument("--skip-meters", action="store_true", help="only C and D")
    ap.add_argument("--eval-arg", action="append", default=[], help="extra argument for `probegate eval` (C)")
    ap.add_argument("--power", type=int, default=0, metavar="N", help="D: validate --power until each correct submission has N runs, counting those already in --power-log")
    ap.add_argument("--power-log", default="out/probe-power", help="D: folder of JSON reports (earlier ones are merged in)")
    ap.add_argument("--power-grace", type=float, default=150, help="D: seconds the evaluations in flight at --seconds get to finish")
    ap.add_argument("--power-merge-only", action="store_true", help="D: evaluate nothing, print the reports already in --power-log merged")
    ap.add_argument("--power-correct-only", action="store_true",
                    help="D: evaluate only the correct examples (validate --correct-only): more false-rejection runs, merged with the full reports in --power-log")
    ap.add_argument("--power-arg", action="append", default=[], help="extra argument for `probegate validate --power` (D), e.g. --power-arg=--unsandboxed")
    a = ap.parse_args()
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    print(f"probe accuracy — {platform.node()}: {os.cpu_count()} cores, {gpu}, torch {torch.__version__}, python {platform.python_version()}")
    t0 = time.time()
    if not a.skip_meters:
        exact = traffic(a.ranks)
        worst = memory()
        print(f"\ntraffic exact: {exact}; worst GPU memory error: {worst / MIB:.3f} MiB")
    if a.repeats:
        repeats(a.repeats, a.node, a.tasks, a.jobs, a.log, a.eval_arg, t0 + a.seconds)
    if a.power or a.power_merge_only:
        power(a.power, a.node, a.tasks, a.jobs, a.power_log, t0 + a.seconds, a.power_arg, a.power_merge_only, a.power_grace, a.power_correct_only)
    print(f"\n{time.time() - t0:.0f}s")
