#!/usr/bin/env bash
# Mutants per minute, packed on the pool (--jobs J) against one at a time (--jobs 1), side by side in
# one run (issue #28: "mutants per minute on the dev box, packed and one at a time").
#
#   bash bench/mutants-throughput.sh [TASK] [ROUNDS]      (default: tasks/weight-sync, 2 rounds)
#
# Each round runs both, the order alternating between rounds, each from an empty cache, for BUDGET
# seconds (default 240; no evaluation starts after it): the same mutants in the same order, so the
# rates compare. JOBS (default: the cores) is the packed run's --jobs; GPUS (default none) its --gpus.
# Prints a table per run, the medians, and packed ÷ one-at-a-time.
set -uo pipefail
cd "$(dirname "$0")/.."
TASK=${1:-tasks/weight-sync}
ROUNDS=${2:-2}
BUDGET=${BUDGET:-240}
JOBS=${JOBS:-$(nproc)}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "mutants-throughput: $TASK, $ROUNDS rounds of --jobs 1 and --jobs $JOBS, $BUDGET s each, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)" >&2
for r in $(seq 1 "$ROUNDS"); do
  order="1 $JOBS"
  [ $((r % 2)) -eq 0 ] && order="$JOBS 1"
  for j in $order; do
    echo "  round $r: --jobs $j…" >&2
    node dist/cli/index.js validate --mutants "$TASK" --jobs "$j" --budget "$BUDGET" --gpus "${GPUS:-none}" \
      --cache "$OUT/cache-$r-$j" --format json > "$OUT/r$r-j$j.json" 2> "$OUT/r$r-j$j.log"
    rc=$?
    # Exit 1 is a probe score under the threshold, which a budget-cut run may well have; 2 is bad input.
    if [ $rc -gt 1 ] || ! [ -s "$OUT/r$r-j$j.json" ]; then echo "validate --mutants failed (exit $rc):" >&2; tail -5 "$OUT/r$r-j$j.log" >&2; exit 2; fi
  done
done
python3 - "$OUT" <<'PY'
import glob, json, os, re, statistics, sys
rows = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "r*-j*.json"))):
    r, j = map(int, re.search(r"r(\d+)-j(\d+)\.json$", f).groups())
    run = json.load(open(f))["tasks"][0]["run"]
    rows.append((r, j, run["evaluated"], run["wallS"], run["mutantsPerMinute"]))
print("| round | --jobs | evaluated | wall s | mutants/min |\n|---:|---:|---:|---:|---:|")
for r, j, n, w, m in rows:
    print(f"| {r} | {j} | {n} | {w:.0f} | {m:.2f} |")
med = {j: statistics.median(m for _, jj, _, _, m in rows if jj == j) for j in sorted({j for _, j, *_ in rows})}
one, packed = med[min(med)], med[max(med)]
print(f"\nmedian mutants/min: one at a time {one:.2f}, --jobs {max(med)} {packed:.2f}; packed ÷ one at a time = {packed / one:.2f}×")
PY
