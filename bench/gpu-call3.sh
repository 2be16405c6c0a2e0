#!/usr/bin/env bash
# One short call on the lent H200 (session 5): the Megatron examples once each through one
# `probegate eval` (one pool: the GPU jobs take the GPU in turn, on cores 0-3), beside the demo of one
# task packed on cores 4-15 against the same task one evaluation at a time. Everything under $OUT is
# packed into one archive at the end (the device returns at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu-call3}
TASK_DEMO=${TASK_DEMO:-paged-kv-cache}
mkdir -p "$OUT/r"
. bench/gpu-bootstrap.sh
E=examples/submissions/megatron-ddp-repeated-params
( timeout 250 node dist/cli/index.js eval --task tasks/megatron-ddp-repeated-params --cores 0-3 --verbose --format json --out "$OUT/r/megatron.json" \
    --submission $E/reference.patch --submission $E/parent.patch --submission $E/launch-before-repeated-grad.patch --submission $E/reduce-twice.patch \
    "${SANDBOX_ARGS[@]}" > /dev/null 2> "$OUT/r/megatron.log"; echo "megatron eval exit $?" >> "$OUT/r/megatron.log" ) &
DEMO="node dist/cli/index.js demo --gpus none --cores 4-15 --task $TASK_DEMO ${SANDBOX_ARGS[*]}"
timeout 120 $DEMO --out-dir "$OUT/r/demo-packed" > "$OUT/r/demo-packed.txt" 2> "$OUT/r/demo-packed.log"; echo "exit $?" >> "$OUT/r/demo-packed.txt"
timeout 180 $DEMO --jobs 1 --out-dir "$OUT/r/demo-serial" > "$OUT/r/demo-serial.txt" 2> "$OUT/r/demo-serial.log"; echo "exit $?" >> "$OUT/r/demo-serial.txt"
wait
tar czf "$OUT/call3.tgz" -C "$OUT" r && rm -rf "$OUT/r"
