#!/usr/bin/env bash
# `probegate validate --mutants` on the lent GPU machine's cores (issue #28): the mutants of each task's
# reference change, evaluated packed on the pool, and a short one-at-a-time run beside it for the
# mutants-per-minute ratio.
#
#   bash bench/gpu-mutants.sh [OUT] [TASK...]        (default: the three quick-set tasks and the Megatron task)
#
# The machine has no PyPI: cosmic-ray and the probegate operator provider travel as wheels in .whl/
# (made on the dev box, see the device README: `pip download --no-deps --only-binary=:all: --python-version
# 3.12 ... cosmic-ray==8.7.0 <its deps from python/probegate_mutants/requirements.lock>`, yattag built with
# `pip wheel`, and `pip wheel --no-deps ./python/probegate_mutants`). They go into /tmp/site, seen only by the
# mutation interpreter (a wrapper sets PYTHONPATH for it alone, so no evaluation sees them).
# A cache carried in .devcache/mutants (from an earlier call's $OUT/cache) makes a call resume.
# Env: BUDGET (s, default 420) for the packed run, SERIAL_BUDGET (s, default 90), JOBS (default cores-2),
# GPUS (default none: every task on its CPU path, so the Megatron task packs on cores too).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-out/gpu-mutants}}
shift || true
TASKS=("$@")
[ ${#TASKS[@]} -gt 0 ] || TASKS=(tasks/sharded-optimizer tasks/paged-kv-cache tasks/weight-sync tasks/megatron-ddp-repeated-params)
mkdir -p "$OUT/cache" "$OUT/cache-serial"
. bench/gpu-bootstrap.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 2
printf '#!/bin/sh\nPYTHONPATH=/tmp/site exec %s "$@"\n' "$PY" > /tmp/mutation-python && chmod +x /tmp/mutation-python
[ -d .devcache/mutants ] && cp .devcache/mutants/*.json "$OUT/cache/" 2>/dev/null
[ -d .devcache/mutants-serial ] && cp .devcache/mutants-serial/*.json "$OUT/cache-serial/" 2>/dev/null
CORES=$(nproc)
JOBS=${JOBS:-$((CORES > 4 ? CORES - 2 : 2))}
"$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)' | tee "$OUT/facts.txt"
echo "cores $CORES, jobs $JOBS, sandbox $SANDBOX, tasks ${TASKS[*]}" | tee -a "$OUT/facts.txt"
COMMON=(--mutants --python "$PY" --mutation-python /tmp/mutation-python --gpus "${GPUS:-none}" ${SANDBOX_ARGS[@]+"${SANDBOX_ARGS[@]}"})
if [ "${SERIAL_BUDGET:-90}" -gt 0 ]; then
  t0=$(date +%s)
  node dist/cli/index.js validate "${COMMON[@]}" tasks/weight-sync --jobs 1 --budget "${SERIAL_BUDGET:-90}" \
    --cache "$OUT/cache-serial" --format json > "$OUT/serial.json" 2> "$OUT/serial.log"
  echo "serial: exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/facts.txt"
fi
t0=$(date +%s)
node dist/cli/index.js validate "${COMMON[@]}" "${TASKS[@]}" --jobs "$JOBS" --budget "${BUDGET:-420}" \
  --cache "$OUT/cache" --format json > "$OUT/mutants.json" 2> "$OUT/packed.log"
echo "packed: exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/facts.txt"
tail -5 "$OUT/packed.log"
