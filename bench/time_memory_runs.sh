#!/usr/bin/env bash
# Issue #29's false-rejection proof: the pack's time and memory probes, RUNS times, on every correct example of
# the tasks that have them (paged-kv-cache, sharded-optimizer, weight-sync), one evaluation at a time under nice.
# Only probe_time.py and probe_memory.py (with the task's _*.py helpers) run: --probes points at a copy holding
# those; the official tests run as in any evaluation. Each round draws fresh probe parameters (seed r × 7919).
# Then: python3 bench/time_memory_summary.py "$OUT"  (checks, non-passed runs, re-measures, headroom).
#
#   bash bench/time_memory_runs.sh [OUT]      env: RUNS (20), DEADLINE (epoch seconds; none by default)
set -u
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/tm20}; RUNS=${RUNS:-20}; DEADLINE=${DEADLINE:-0}
mkdir -p "$OUT"
export PROBEGATE_CLAIMS=${PROBEGATE_CLAIMS:-$OUT/claims}
declare -A SUBS=(
 [paged-kv-cache]="reference alt-flat-slot-pool alt-heads-major-fifo"
 [sharded-optimizer]="reference alt-strided-shards alt-reverse-buckets"
 [weight-sync]="reference alt-byte-buckets alt-dtype-streams")
for t in "${!SUBS[@]}"; do
  rm -rf "$OUT/probes/$t"; mkdir -p "$OUT/probes/$t"
  cp probes/$t/probe_time.py probes/$t/probe_memory.py "$OUT/probes/$t/"
  cp probes/$t/_*.py "$OUT/probes/$t/" 2>/dev/null || true
done
for r in $(seq 1 "$RUNS"); do
  for t in paged-kv-cache sharded-optimizer weight-sync; do
    [ -s "$OUT/$t-$r.json" ] && continue
    if [ "$DEADLINE" -gt 0 ] && [ "$(date +%s)" -gt "$DEADLINE" ]; then echo "deadline reached before round $r $t"; exit 0; fi
    args=(); for s in ${SUBS[$t]}; do args+=(--submission "examples/submissions/$t/$s.patch"); done
    t0=$(date +%s)
    nice -n 5 node dist/cli/index.js eval --task "tasks/$t" --probes "$OUT/probes/$t" "${args[@]}" --gpus none \
      --seed $((r * 7919)) --out "$OUT/$t-$r.json.tmp" --format text > "$OUT/$t-$r.log" 2>&1
    rc=$?; mv "$OUT/$t-$r.json.tmp" "$OUT/$t-$r.json" 2>/dev/null
    echo "round $r $t rc=$rc $(( $(date +%s) - t0 )) s load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
