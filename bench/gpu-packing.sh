#!/usr/bin/env bash
# Issue #14 on the lent GPU machine (1 H200, 16 cores): job packing with the real GPU and with
# simulated 1/2/4/8 GPUs, then the demo's evaluations packed on the cores against one at a time.
# The demo prints its own wall time ("Wall time …, N at a time"). Figures go to $1 or $OUT (default out/gpu-packing); a summary is printed at the end.
#
#   bash bench/gpu-packing.sh [OUTDIR] [packing] [demo] [demo-serial] [--budget SECONDS]
#
# Needs dist/ built (the lead's build) and, as for bench/gpu-session.sh, .devnode/node.gz where
# the machine has no node; .devnode/bwrap where it has no bubblewrap (else the demo runs
# --unsandboxed, and says so).
#   DEMO_SET   quick (default: the demo's quick set, what `npm run demo` evaluates) or all
#   DEMO_TASKS the tasks (default: the three CPU tasks); DEMO_CORES: cores for both demo runs (default: all)
# `demo-serial` (one job at a time, `--jobs 1`) is the long part: it evaluates one example per
# `probegate demo --example` run while the budget lasts, records each in OUTDIR/demo-serial.tsv
# (task/example, verdict as expected or not, seconds) and skips the examples whose report is
# already in OUTDIR/demo-serial, so calls after the first resume it where it stopped. An example
# cut off by the budget is not recorded and runs whole next time.
# PACK_OUT=1 (on the device, which returns at most 8 files): the output folder ends as one .tgz beside it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu-packing}
BUDGET=540
PHASES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) BUDGET=$2; shift 2 ;;
    packing|demo|demo-serial) PHASES+=("$1"); shift ;;
    *) OUT=$1; shift ;;
  esac
done
[ ${#PHASES[@]} -gt 0 ] || PHASES=(packing demo demo-serial)
mkdir -p "$OUT"
START=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - START))); }
. bench/gpu-bootstrap.sh
{
  echo "date: $(date -u +%FT%TZ)  cores: $(nproc)  node: $(node --version)  sandbox: $SANDBOX"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  $PY -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
} > "$OUT/facts.txt" 2>&1
cat "$OUT/facts.txt"
# DEMO_TASKS (default: the three CPU tasks) and DEMO_CORES (default: all) narrow both demo runs alike.
DEMO_TASKS=${DEMO_TASKS:-sharded-optimizer paged-kv-cache weight-sync}
case "${DEMO_SET:=quick}" in quick) SET= ;; all) SET=--all ;; *) echo "DEMO_SET: expected quick or all, got '$DEMO_SET'" >&2; exit 2 ;; esac
DEMO="node dist/cli/index.js demo $SET --gpus none ${DEMO_CORES:+--cores $DEMO_CORES} ${SANDBOX_ARGS[*]}"

for phase in "${PHASES[@]}"; do
  echo "== $phase ($(left) s left)" >&2
  case "$phase" in
    packing)
      # The real H200: every job allocates 256 MiB on its GPU and holds it; the pool hands the GPU
      # on only once nvidia-smi reads it back at its idle baseline.
      timeout "$(left)" node bench/packing.mjs --gpus 1 --real-gpu --out "$OUT/packing-real" > "$OUT/packing-real.log" 2>&1; tail -8 "$OUT/packing-real.log"
      timeout "$(left)" node bench/packing.mjs --gpus 1,2,4,8 --out "$OUT/packing-simulated" > "$OUT/packing-simulated.log" 2>&1; tail -10 "$OUT/packing-simulated.log" ;;
    demo)
      # Every example of DEMO_TASKS, packed on the 16 cores (gloo, 2 ranks and 2 pinned cores per job).
      timeout "$(left)" $DEMO --task $DEMO_TASKS --out-dir "$OUT/demo-packed" > "$OUT/demo-packed.txt" 2> "$OUT/demo-packed.log"
      echo "exit $?" >> "$OUT/demo-packed.txt"; tail -3 "$OUT/demo-packed.txt" ;;
    demo-serial)
      # One example per demo run, so a call that ends mid-way loses at most the example in flight.
      $DEMO --task $DEMO_TASKS --list > "$OUT/demo-serial.list" || { echo "demo --list failed" >&2; continue; }
      while read -r ex; do
        [ -f "$OUT/demo-serial/$ex.json" ] && continue
        [ "$(left)" -gt 30 ] || { echo "budget spent: run 'bash bench/gpu-packing.sh $OUT demo-serial' again for the rest" >&2; break; }
        t0=$(date +%s.%N)
        timeout "$(left)" $DEMO --jobs 1 --task "${ex%%/*}" --example "${ex#*/}" --out-dir "$OUT/demo-serial" >> "$OUT/demo-serial.txt" 2>> "$OUT/demo-serial.log" < /dev/null
        rc=$?
        secs=$(awk "BEGIN { print $(date +%s.%N) - $t0 }")
        case $rc in
          0|1) printf '%s\t%s\t%.1f\n' "$ex" "$([ $rc = 0 ] && echo as-expected || echo NOT-as-expected)" "$secs" >> "$OUT/demo-serial.tsv" ;;
          *) rm -f "$OUT/demo-serial/$ex.json"; echo "$ex: cut off or failed (exit $rc) after ${secs}s; not recorded" >&2 ;;
        esac
      done < "$OUT/demo-serial.list"
      awk -F'\t' '{n++; ok+=($2=="as-expected"); t+=$3} END {printf "demo-serial: %d of %d examples evaluated one job at a time, %d as expected, %.1f s in all\n", n, list, ok, t}' list="$(wc -l < "$OUT/demo-serial.list")" "$OUT/demo-serial.tsv" 2>/dev/null | tee "$OUT/demo-serial-summary.txt" ;;
  esac
done

echo "== summary"
grep -h "verdicts as expected" "$OUT"/demo-packed.txt 2>/dev/null
cat "$OUT/demo-serial-summary.txt" 2>/dev/null
for f in "$OUT"/packing-*/packing.md; do [ -f "$f" ] && cat "$f"; done
pack_out "$OUT"
