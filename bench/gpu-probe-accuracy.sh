#!/usr/bin/env bash
# Probe power on the lent H200 (issue #15): per task, `probegate validate --power` (the probes x
# submissions matrix) and false rejections until each correct submission (reference and
# alternatives) has RUNS runs over all calls, all three tasks at once, JOBS evaluations at a time in
# all. Every example runs once, then the correct ones round by round; no evaluation starts after
# BUDGET seconds and those in flight get GRACE more, so one call ends within BUDGET + GRACE (+ start-up).
# Reports are kept as JSON and merged with earlier calls' (carry the previous $OUT/power folder as
# POWER_LOG): a task runs only the runs its least-run correct submission still lacks, and the jobs
# go to the tasks in proportion to what they lack; the `covered:` line says how far it got.
#
#   bash bench/gpu-probe-accuracy.sh [OUT]        # OUT default: $OUT, else out/gpu-probe-accuracy
#   env: RUNS (20), JOBS (12), BUDGET (200), GRACE (130), POWER_LOG (earlier reports), POWER_ARGS,
#        CORRECT_ONLY (1: evaluate only the correct examples, `validate --correct-only`),
#        GPUS (none: gloo on the cores; all: the tasks' jobs on the machine's GPUs)
#
# GPUS=none by default: the three CPU tasks ask for 2 GPUs, and on a 1-GPU machine each of their
# jobs falls back to gloo on the one GPU, pinned to that GPU's share of the cores (all of them), so
# the machine runs one job at a time (session 7: 11 evaluations in three ~9-minute calls).
#
# CORRECT_ONLY=1 is for the calls after a full one: the flawed examples need one run, and re-running
# them each call wastes most of it. Its reports add runs to the correct columns only; the flawed
# columns come from the full reports carried in POWER_LOG (with none, power.md says power is unknown).
#
# Writes $OUT/facts.txt, $OUT/power.md (the tables for bench/RESULTS.md), $OUT/power/*.json (one
# report per task and call) and $OUT/power/*.stderr (progress of each validate run).
# PACK_OUT=1 (on the device, which returns at most 8 files): the output folder ends as one .tgz beside it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-out/gpu-probe-accuracy}}
RUNS=${RUNS:-20}
JOBS=${JOBS:-12}
BUDGET=${BUDGET:-200}
GRACE=${GRACE:-130}
CORRECT_ONLY=${CORRECT_ONLY:-0}
case "$CORRECT_ONLY" in 0|1) ;; *) echo "CORRECT_ONLY: expected 0 or 1, got '$CORRECT_ONLY'" >&2; exit 2 ;; esac
mkdir -p "$OUT/power"
. bench/gpu-bootstrap.sh
GPUS=${GPUS:-none}
ARGS=(--gpus "$GPUS" ${POWER_ARGS:-} "${SANDBOX_ARGS[@]}")
[ -n "${POWER_LOG:-}" ] && cp -p "$POWER_LOG"/power-*.json "$OUT/power/" 2>/dev/null
{
  echo "date: $(date -u +%FT%TZ)"; echo "cores: $(nproc)"; free -g | sed -n 2p
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
  echo "node: $($NODE --version)"; $PY -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
  echo "runs: goal $RUNS of each correct submission over all calls, jobs: $JOBS, budget: ${BUDGET}s + ${GRACE}s grace, correct only: $CORRECT_ONLY, validate args: ${ARGS[*]:-none}"
} > "$OUT/facts.txt" 2>&1
cat "$OUT/facts.txt"
PARGS=()
[ "$CORRECT_ONLY" = 1 ] && PARGS+=(--power-correct-only)
for a in "${ARGS[@]}"; do PARGS+=("--power-arg=$a"); done
# One thread per rank: JOBS evaluations of two ranks each share the cores.
OMP_NUM_THREADS=1 timeout $((BUDGET + GRACE + 15)) "$PY" bench/probe_accuracy.py --skip-meters --power "$RUNS" --jobs "$JOBS" --node "$NODE" \
  --power-log "$OUT/power" --seconds "$BUDGET" --power-grace "$GRACE" "${PARGS[@]}" > "$OUT/power.md" 2>&1
echo "probe_accuracy exit $?" >> "$OUT/power.md"
cat "$OUT/power.md"
pack_out "$OUT"
