#!/usr/bin/env bash
# One call on the lent GPU machine: what it has, the probe kit's meters, the task pack on NCCL,
# the engine's overhead, and the verdict-stability run. Figures go to $OUT (default out/gpu-session).
#
#   bash bench/gpu-session.sh [facts] [accuracy] [nccl] [overhead] [app] [sandbox] [gpumem] [stability] [--budget SECONDS]
#
# The machine has no Node: a gzip of this machine's node binary travels as .devnode/node.gz. The
# stability run is resumable: it appends to $OUT/stability.jsonl and skips what STABILITY_LOG holds.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu-session}
mkdir -p "$OUT"
BUDGET=540
PHASES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) BUDGET=$2; shift 2 ;;
    *) PHASES+=("$1"); shift ;;
  esac
done
[ ${#PHASES[@]} -gt 0 ] || PHASES=(facts accuracy nccl overhead)
START=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - START))); }
. bench/gpu-bootstrap.sh
# Extra `probegate eval` flags for every evaluation, e.g. EVAL_ARGS="--unsandboxed".
EVAL_ARGS_PY=""
for a in ${EVAL_ARGS:-}; do EVAL_ARGS_PY+=" --eval-arg=$a"; done
JOBS=${JOBS:-$(( $(nproc) / 2 ))}

for phase in "${PHASES[@]}"; do
  echo "== $phase ($(left) s left)" >&2
  case "$phase" in
    facts)
      {
        echo "date: $(date -u +%FT%TZ)"; echo "cores: $(nproc)"; free -g | sed -n 2p
        nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
        echo "node: $($NODE --version)"; $PY -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else None)'
        echo "bwrap: $(command -v bwrap || echo none)"
        unshare -U -r true 2>&1 && echo "user namespaces: yes" || echo "user namespaces: no"
        echo "cgroup: $(stat -fc %T /sys/fs/cgroup)"
      } > "$OUT/facts.txt" 2>&1
      cat "$OUT/facts.txt" ;;
    accuracy)
      timeout "$(left)" $PY bench/probe_accuracy.py --ranks 2 4 > "$OUT/accuracy.md" 2>&1; tail -5 "$OUT/accuracy.md" ;;
    nccl)
      # One rank per GPU on NCCL: with one GPU that is world size 1 (traffic between ranks is then
      # zero, so traffic flaws cannot show; every other category can).
      timeout "$(left)" $PY bench/probe_accuracy.py --skip-meters --repeats 1 --jobs 4 --node "$NODE" \
        --log "$OUT/nccl.jsonl" --seconds "$(( $(left) - 60 ))" --eval-arg=--world-size --eval-arg=1 $EVAL_ARGS_PY \
        > "$OUT/nccl.md" 2>&1; tail -25 "$OUT/nccl.md" ;;
    overhead)
      timeout "$(left)" $NODE bench/engine-overhead.mjs --task test/fixtures/tasks/tiny-sum --submission test/fixtures/submissions/tiny-sum/reference.patch \
        --task tasks/paged-kv-cache --submission examples/submissions/paged-kv-cache/reference.patch --rounds 3 > "$OUT/overhead.md" 2>&1; cat "$OUT/overhead.md" ;;
    app)
      # The app's throughput on an idle many-core machine. The machine has no node_modules: the
      # caller puts ncc bundles of bench/app-throughput.mjs and bench/app-github-stub.mjs in place.
      timeout "$(left)" $NODE --expose-gc bench/app-throughput.mjs --deliveries "${APP_DELIVERIES:-10000}" > "$OUT/app-throughput.md" 2>&1; tail -20 "$OUT/app-throughput.md" ;;
    sandbox)
      # Where bubblewrap is missing the engine must refuse (verdict error, phase sandbox); with a
      # bubblewrap binary carried along as .devnode/bwrap, the same evaluations run sandboxed, the
      # NCCL one with only the job's /dev/nvidiaN inside.
      CLI="$NODE dist/cli/index.js eval --format json"
      PROBEGATE_BWRAP=/nonexistent/bwrap $CLI --task test/fixtures/tasks/tiny-sum --submission test/fixtures/submissions/tiny-sum/reference.patch > "$OUT/sandbox-refused.json"
      echo "no bubblewrap: exit $?" | tee "$OUT/sandbox.txt"
      if [ -f .devnode/bwrap ]; then
        mkdir -p /tmp/devnode/bin && cp .devnode/bwrap /tmp/devnode/bin/bwrap && chmod 755 /tmp/devnode/bin/bwrap
        export PROBEGATE_BWRAP=/tmp/devnode/bin/bwrap
        for run in ${SANDBOX_RUNS:-"paged-kv-cache:reference" "paged-kv-cache:heads-replicated" "paged-kv-cache:reference:--world-size:1" "weight-sync:full-flatten"}; do
          run=${run//:/ }
          set -- $run
          name="sandbox-$1-$2${3:+-nccl}"
          timeout "$(left)" $CLI --task "tasks/$1" --submission "examples/submissions/$1/$2.patch" ${3:+$3 $4} > "$OUT/$name.json" 2> "$OUT/$name.log"
          echo "$run: exit $? $($PY -c 'import json,sys; r=json.load(open(sys.argv[1])); e=r["environment"]; print(r["verdict"], "sandboxed", e.get("sandboxed"), "cgroup", e.get("cgroup"), "backend", e.get("backend"), "x", e.get("worldSize"), "gpus", e.get("gpus"), "s", round(r["durations"]["totalS"],1), (r.get("error") or {}).get("message","")[:300])' "$OUT/$name.json" 2>&1)" | tee -a "$OUT/sandbox.txt"
        done
      fi ;;
    gpumem)
      # GPU memory of record (nvidia-smi, outside the sandbox) beside the memory probes' own figures,
      # one evaluation at a time so the GPU is the job's alone.
      timeout "$(left)" $PY bench/gpu_memory_of_record.py --node "$NODE" --out "$OUT/gpumem" > "$OUT/gpumem.md" 2>&1; cat "$OUT/gpumem.md" ;;
    stability)
      [ -n "${STABILITY_LOG:-}" ] && cp "$STABILITY_LOG" "$OUT/stability.jsonl"
      # One thread per rank: $JOBS evaluations of two ranks each share the cores.
      OMP_NUM_THREADS=1 timeout "$(left)" $PY bench/probe_accuracy.py --skip-meters --repeats 20 --jobs "$JOBS" --node "$NODE" \
        --log "$OUT/stability.jsonl" --seconds "$(( $(left) - 90 ))" $EVAL_ARGS_PY > "$OUT/stability.md" 2>&1; tail -25 "$OUT/stability.md" ;;
    *) echo "unknown phase $phase" >&2; exit 2 ;;
  esac
done
