#!/usr/bin/env bash
# The Megatron-LM task (megatron-ddp-repeated-params) on the lent GPU machine.
#
#   bash bench/gpu-megatron.sh [OUT]           every example through one `probegate eval` per round (one pool:
#                                              GPU jobs take the GPU in turn), ROUNDS (5) rounds; a table of
#                                              verdicts against expected.yml (about 2 minutes a round)
#   MEGATRON_GIT=<git dir> bash bench/gpu-megatron.sh [OUT] import
#                                              re-derives the task with `probegate task import` from a git
#                                              repository holding both SHAs of PR #2837 and compares its
#                                              fail-to-pass / pass-to-pass sets with the committed import.yml
#                                              (about 2 minutes)
#
# Needs: torch >= 2.4 with CUDA and a GPU, pytest, numpy, packaging (Megatron imports them), and node
# (unpacked from .devnode/node.xz where the machine has none: bench/gpu-bootstrap.sh). With a
# bubblewrap binary at .devnode/bwrap the evaluations run sandboxed; without one they run --unsandboxed
# and the table says so. Writes $OUT/<round>-<example>.json (results), .log, and $OUT/table.md.
# PACK_OUT=1 (on the device, which returns at most 8 files): the output folder ends as one .tgz beside it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-out/gpu-megatron}}
MODE=${2:-eval}
ROUNDS=${ROUNDS:-5}
BUDGET=${BUDGET:-420}
TASK=tasks/megatron-ddp-repeated-params
EXAMPLES=examples/submissions/megatron-ddp-repeated-params
mkdir -p "$OUT"
START=$(date +%s)
. bench/gpu-bootstrap.sh
if ! $PY -c 'import torch, numpy, packaging, pytest; assert torch.cuda.is_available(), "no CUDA GPU"' 2> "$OUT/deps.txt"; then
  echo "gpu-megatron: this machine lacks what Megatron's tests need: $(tail -1 "$OUT/deps.txt")" >&2
  echo "  (needs torch>=2.4 with CUDA, pytest, numpy, packaging)" >&2
  exit 2
fi
$PY -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.get_device_name(0))' | tee "$OUT/facts.txt"
UNSB="${SANDBOX_ARGS[*]}"
echo "sandbox: $SANDBOX" | tee -a "$OUT/facts.txt"

if [ "$MODE" = import ]; then
  [ -n "${MEGATRON_GIT:-}" ] || { echo "gpu-megatron import: set MEGATRON_GIT to a git dir with both SHAs (see the README)" >&2; exit 2; }
  PACK=$(mktemp -d)
  node dist/cli/index.js task import --repo "$MEGATRON_GIT" \
    --pr-base 5548cdc57bb68c0e3d3465eb1278e59d246e9d52 --pr-head aa3f1057f0c33d705a6d69806a93f4c98f2776da \
    --tests 'tests/**' --exclude 'test_grad_sync[2-' test_grad_sync_with_expert_parallel \
    --trace-imports --keep LICENSE --setup "$TASK/setup" --pytest-plugin probegate_megatron \
    --gpus 1 --area training --requires-torch '>=2.4' --timeout 300 \
    --out "$PACK/tasks/megatron-ddp-repeated-params" > "$OUT/import.log" 2>&1
  rc=$?
  cat "$OUT/import.log"
  [ $rc -eq 0 ] || exit $rc
  cp "$PACK/tasks/megatron-ddp-repeated-params/import.yml" "$OUT/import.yml"
  $PY - "$OUT/import.yml" "$TASK/import.yml" <<'PY' | tee "$OUT/import-compare.md"
import re, sys
def sets(path):
    out, key = {}, None
    for line in open(path):
        m = re.match(r"^(\w+):\s*$", line)
        if m: key = m.group(1); out[key] = set(); continue
        m = re.match(r'^  - "?([^"]+?)"?\s*$', line)
        if key and m: out[key].add(m.group(1))
    return out
got, want = sets(sys.argv[1]), sets(sys.argv[2])
for k in ("fail_to_pass", "pass_to_pass"):
    g, w = got.get(k, set()), want.get(k, set())
    print(f"{k}: task import on this machine found {len(g)}, the committed task has {len(w)}: {'same' if g == w else 'DIFFERENT'}")
    for x in sorted(g - w): print(f"  only found here: {x}")
    for x in sorted(w - g): print(f"  only committed:  {x}")
PY
  pack_out "$OUT"; exit 0
fi

# What bounds threads and processes here (EAGAIN from pthread_create or fork is one of these), and a
# sampler of threads per uid and of the machine's pids cgroup while the evaluations run.
{
  echo "id: $(id)"; echo "ulimit -u (RLIMIT_NPROC): $(ulimit -u)"; echo "kernel.threads-max: $(cat /proc/sys/kernel/threads-max)"
  echo "kernel.pid_max: $(cat /proc/sys/kernel/pid_max)"; echo "cgroup: $(cat /proc/self/cgroup | tr '\n' ' ')"
  cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
  echo "pids.max here: $(cat "$cg/pids.max" 2>/dev/null || echo n/a), root pids.max: $(cat /sys/fs/cgroup/pids.max 2>/dev/null || echo n/a)"
} > "$OUT/limits.txt" 2>&1
cat "$OUT/limits.txt"
( while :; do
    echo "$(date +%s.%N) $(cat /sys/fs/cgroup/pids.current 2>/dev/null || echo -) $(ps -eLo uid= | sort | uniq -c | awk '{printf "%s:%s,", $2, $1}')"
    sleep 0.5
  done ) > "$OUT/threads.log" 2>&1 &
SAMPLER=$!
trap 'kill $SAMPLER 2>/dev/null' EXIT
names=$(sed -n 's/^- submission: \(.*\)\.patch$/\1/p' "$EXAMPLES/expected.yml")
for round in $(seq 1 "$ROUNDS"); do
  if [ $(( $(date +%s) - START )) -gt "$BUDGET" ]; then echo "budget of ${BUDGET}s spent: stopping before round $round" | tee -a "$OUT/facts.txt"; break; fi
  echo "== round $round ($(( $(date +%s) - START ))s)" >&2
  # One `probegate eval` per round with every example: one pool, so the GPU jobs take the GPU in turn
  # (separate processes would each believe they own it). Results: one JSON array per round, split below.
  subs=(); for n in $names; do subs+=(--submission "$EXAMPLES/$n.patch"); done
  timeout $(( BUDGET + 300 )) node dist/cli/index.js eval --task "$TASK" "${subs[@]}" --verbose --format json --out "$OUT/$round.json" $UNSB > /dev/null 2> "$OUT/$round.log"
  $PY - "$OUT" "$round" $names <<'SPLIT'
import json, sys
out, rnd, names = sys.argv[1], sys.argv[2], sys.argv[3:]
try:
    results = json.load(open(f"{out}/{rnd}.json"))
except Exception as e:
    sys.exit(f"round {rnd}: no results ({e})")
for name, r in zip(names, results):
    json.dump(r, open(f"{out}/{rnd}-{name}.json", "w"))
SPLIT
  rm -f "$OUT/$round.json"
done
kill $SAMPLER 2>/dev/null
# The most threads any uid had at once, and the most tasks in the pids cgroup, over the run.
awk '{ if ($2 != "-" && $2 > pmax) pmax = $2; n = split($3, a, ","); for (i = 1; i <= n; i++) { split(a[i], b, ":"); if (b[2] > m[b[1]]) m[b[1]] = b[2] } }
     END { printf "peak pids.current: %s; peak threads per uid:", pmax; for (u in m) printf " uid %s: %s", u, m[u]; print "" }' "$OUT/threads.log" | tee -a "$OUT/limits.txt"
# Where each EAGAIN came from: the lines around it in the evaluation logs and results.
grep -l "Resource temporarily unavailable" "$OUT"/*.log "$OUT"/*.json 2>/dev/null | head -3 | while read -r f; do
  echo "--- $f"; grep -n -B12 -A3 "Resource temporarily unavailable" "$f" | head -60
done > "$OUT/eagain.txt"
head -c 6000 "$OUT/eagain.txt"
$PY - "$OUT" "$EXAMPLES/expected.yml" "$SANDBOX" "one pool" <<'PY' | tee "$OUT/table.md"
import glob, json, os, re, statistics, sys
out, expected_file, sandbox, parallel = sys.argv[1:5]
want, cur = {}, None
for line in open(expected_file):
    m = re.match(r"^- submission: (.*)\.patch", line)
    if m: cur = m.group(1); want[cur] = {"verdict": None, "cats": []}
    m = re.match(r"^  verdict: (\S+)", line)
    if m and cur: want[cur]["verdict"] = m.group(1)
    m = re.match(r"^  failedCategories: \[(.*)\]", line)
    if m and cur: want[cur]["cats"] = sorted(c.strip() for c in m.group(1).split(",") if c.strip())
print(f"| example | expected | runs | as expected | verdicts | failed categories | official s (median) | probes s (median) | total s (median) |")
print("|---|---|---|---|---|---|---|---|---|")
bad = 0
for name, w in want.items():
    runs = []
    for f in sorted(glob.glob(os.path.join(out, f"*-{name}.json"))):
        try: runs.append(json.load(open(f)))
        except Exception: pass
    ok = 0; verdicts = {}; cats = {}
    for r in runs:
        got = sorted({p["category"] for p in r["probes"] if p["status"] == "failed"})
        good = r["verdict"] == w["verdict"] and (w["verdict"] != "probe-rejected" or got == w["cats"])
        ok += good; verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
        cats[",".join(got) or "-"] = cats.get(",".join(got) or "-", 0) + 1
    bad += len(runs) - ok
    med = lambda k: f"{statistics.median(r['durations'][k] for r in runs):.1f}" if runs else "-"
    exp = w["verdict"] + (f" [{', '.join(w['cats'])}]" if w["cats"] else "")
    print(f"| {name} | {exp} | {len(runs)} | {ok}/{len(runs)} | {', '.join(f'{k} ×{v}' for k, v in verdicts.items())} | {', '.join(f'{k} ×{v}' for k, v in cats.items())} | {med('officialS')} | {med('probesS')} | {med('totalS')} |")
print(f"\n{sandbox}, {parallel} per round (one probegate eval); {bad} unexpected verdicts.")
for f in sorted(glob.glob(os.path.join(out, "*.json"))):
    r = json.load(open(f))
    if r.get("error") or any(p["status"] == "error" for p in r["probes"]):
        print(f"- {os.path.basename(f)}: {r['verdict']}: {(r.get('error') or {}).get('message') or '; '.join(p['id'] + ': ' + p['message'] for p in r['probes'] if p['status'] == 'error')}"[:400])
PY
pack_out "$OUT"
