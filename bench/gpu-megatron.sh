#!/usr/bin/env bash
# The Megatron-LM task (megatron-ddp-repeated-params) on the lent GPU machine.
#
#   bash bench/gpu-megatron.sh [OUT]           every example through `probegate eval`, ROUNDS (5) times each,
#                                              PARALLEL (4) evaluations at once on the one GPU; a table of
#                                              verdicts against expected.yml (about 4-5 minutes)
#   MEGATRON_GIT=<git dir> bash bench/gpu-megatron.sh [OUT] import
#                                              re-derives the task with `probegate task import` from a git
#                                              repository holding both SHAs of PR #2837 and compares its
#                                              fail-to-pass / pass-to-pass sets with the committed import.yml
#                                              (about 2 minutes)
#
# Needs: torch >= 2.4 with CUDA and a GPU, pytest, numpy, packaging (Megatron imports them), and node
# (gunzipped from .devnode/node.gz where the machine has none, as bench/gpu-session.sh does). With a
# bubblewrap binary at .devnode/bwrap the evaluations run sandboxed; without one they run --unsandboxed
# and the table says so. Writes $OUT/<round>-<example>.json (results), .log, and $OUT/table.md.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-out/gpu-megatron}}
MODE=${2:-eval}
ROUNDS=${ROUNDS:-5}
PARALLEL=${PARALLEL:-4}
BUDGET=${BUDGET:-420}
TASK=tasks/megatron-ddp-repeated-params
EXAMPLES=examples/submissions/megatron-ddp-repeated-params
mkdir -p "$OUT"
START=$(date +%s)
if ! command -v node >/dev/null; then
  mkdir -p /tmp/devnode/bin
  gunzip -c .devnode/node.gz > /tmp/devnode/bin/node && chmod +x /tmp/devnode/bin/node
  export PATH=/tmp/devnode/bin:$PATH
fi
# Absolute: inside a job PATH is /usr/local/bin:/usr/bin:/bin, where a bare python3 may be another interpreter.
PY=$(command -v "${PROBEGATE_PYTHON:-python3}")
export PROBEGATE_PYTHON=$PY
if ! $PY -c 'import torch, numpy, packaging, pytest; assert torch.cuda.is_available(), "no CUDA GPU"' 2> "$OUT/deps.txt"; then
  echo "gpu-megatron: this machine lacks what Megatron's tests need: $(tail -1 "$OUT/deps.txt")" >&2
  echo "  (needs torch>=2.4 with CUDA, pytest, numpy, packaging)" >&2
  exit 2
fi
$PY -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.get_device_name(0))' | tee "$OUT/facts.txt"
SANDBOX=sandboxed
UNSB=""
if [ -f .devnode/bwrap ]; then
  mkdir -p /tmp/devnode/bin && cp .devnode/bwrap /tmp/devnode/bin/bwrap && chmod 755 /tmp/devnode/bin/bwrap
  export PROBEGATE_BWRAP=/tmp/devnode/bin/bwrap
elif ! command -v bwrap >/dev/null; then
  SANDBOX=unsandboxed; UNSB=--unsandboxed
fi
echo "sandbox: $SANDBOX" | tee -a "$OUT/facts.txt"

if [ "$MODE" = import ]; then
  [ -n "${MEGATRON_GIT:-}" ] || { echo "gpu-megatron import: set MEGATRON_GIT to a git dir with both SHAs (see the README)" >&2; exit 2; }
  PACK=$(mktemp -d)
  node dist/cli/index.js task import --repo "$MEGATRON_GIT" \
    --pr-base 5548cdc57bb68c0e3d3465eb1278e59d246e9d52 --pr-head aa3f1057f0c33d705a6d69806a93f4c98f2776da \
    --tests 'tests/**' --exclude 'test_grad_sync[2-' test_grad_sync_with_expert_parallel \
    --trace-imports --keep LICENSE --setup "$TASK/setup" --pytest-plugin probegate_megatron \
    --gpus 1 --area training --requires-torch '>=2.4' --requires-cuda --requires-gpus 1 --timeout 300 \
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
  exit 0
fi

names=$(sed -n 's/^- submission: \(.*\)\.patch$/\1/p' "$EXAMPLES/expected.yml")
for round in $(seq 1 "$ROUNDS"); do
  if [ $(( $(date +%s) - START )) -gt "$BUDGET" ]; then echo "budget of ${BUDGET}s spent: stopping before round $round" | tee -a "$OUT/facts.txt"; break; fi
  echo "== round $round ($(( $(date +%s) - START ))s)" >&2
  running=0
  for n in $names; do
    node dist/cli/index.js eval --task "$TASK" --submission "$EXAMPLES/$n.patch" --format json --out "$OUT/$round-$n.json" $UNSB > "$OUT/$round-$n.log" 2>&1 &
    running=$((running + 1))
    if [ "$running" -ge "$PARALLEL" ]; then wait -n; running=$((running - 1)); fi
  done
  wait
done
$PY - "$OUT" "$EXAMPLES/expected.yml" "$SANDBOX" "$PARALLEL" <<'PY' | tee "$OUT/table.md"
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
print(f"\n{sandbox}, {parallel} evaluations at once on one GPU; {bad} unexpected verdicts.")
for f in sorted(glob.glob(os.path.join(out, "*.json"))):
    r = json.load(open(f))
    if r.get("error") or any(p["status"] == "error" for p in r["probes"]):
        print(f"- {os.path.basename(f)}: {r['verdict']}: {(r.get('error') or {}).get('message') or '; '.join(p['id'] + ': ' + p['message'] for p in r['probes'] if p['status'] == 'error')}"[:400])
PY
