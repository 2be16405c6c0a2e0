#!/usr/bin/env bash
# Issue #14 on the lent GPU machine (1 H200, 16 cores): job packing with the real GPU and with
# simulated 1/2/4/8 GPUs, then every example of the demo (--all) packed on the 16 cores against one at a time.
# The demo prints its own wall time ("Wall time …, N at a time"). Figures go to $1 or $OUT (default out/gpu-packing); a summary is printed at the end.
#
#   bash bench/gpu-packing.sh [OUTDIR] [packing] [demo] [demo-serial] [--budget SECONDS]
#
# Needs dist/ built (the lead's build) and, as for bench/gpu-session.sh, .devnode/node.gz where
# the machine has no node; .devnode/bwrap where it has no bubblewrap (else the demo runs
# --unsandboxed, and says so). `demo-serial` (one evaluation at a time) is the long part: it runs
# task by task while the budget lasts and skips tasks already in OUTDIR, so a second call finishes it.
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
DEMO="node dist/cli/index.js demo --all --gpus none ${DEMO_CORES:+--cores $DEMO_CORES} ${SANDBOX_ARGS[*]}"

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
      for task in $DEMO_TASKS; do
        [ -f "$OUT/demo-serial-$task.txt" ] && grep -q '^exit 0' "$OUT/demo-serial-$task.txt" && continue
        [ "$(left)" -gt 60 ] || { echo "budget spent: run 'bash bench/gpu-packing.sh $OUT demo-serial' again for the rest" >&2; break; }
        timeout "$(left)" $DEMO --jobs 1 --task "$task" --out-dir "$OUT/demo-serial" > "$OUT/demo-serial-$task.txt" 2> "$OUT/demo-serial-$task.log"
        rc=$?
        echo "exit $rc" >> "$OUT/demo-serial-$task.txt"
        tail -3 "$OUT/demo-serial-$task.txt"
      done ;;
  esac
done

echo "== summary"
grep -h "verdicts as expected" "$OUT"/demo-*.txt 2>/dev/null
for f in "$OUT"/packing-*/packing.md; do [ -f "$f" ] && cat "$f"; done
pack_out "$OUT"
