#!/usr/bin/env bash
# Device check of the GPU memory limit: a submission that grabs 1 GiB of GPU memory every 0.1 s at
# import, under a task limit of 8 GiB, must be killed by the engine (verdict names gpu-memory), the
# GPU must be back at its baseline afterwards, and the reference under the same limit must resolve.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu-hog}; mkdir -p "$OUT"
NODE=${NODE:-node}; PY=${PROBEGATE_PYTHON:-python3}
sed -i 's/^  outputBytes: 1MiB$/  outputBytes: 1MiB\n  gpuMemory: 8GiB/' tasks/paged-kv-cache/task.yml
grep -n gpuMemory tasks/paged-kv-cache/task.yml
SUB=$(mktemp -d)/sub; cp -r tasks/paged-kv-cache/base "$SUB"
(cd "$SUB" && git apply "$OLDPWD/examples/submissions/paged-kv-cache/reference.patch") || exit 1
{ printf '%s\n' "import time as _time, torch as _torch" "if _torch.cuda.is_available():" "    _hog = []" "    for _ in range(64):" "        _hog.append(_torch.empty(1 << 30, dtype=_torch.uint8, device='cuda'))" "        _time.sleep(0.1)"; cat "$SUB/pagedkv/__init__.py"; } > "$SUB/init.py" && mv "$SUB/init.py" "$SUB/pagedkv/__init__.py"
nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits | sed 's/^/before: /'
for run in hog:"$SUB" reference:examples/submissions/paged-kv-cache/reference.patch; do
  name=${run%%:*}; sub=${run#*:}
  t0=$SECONDS
  $NODE dist/cli/index.js eval --task tasks/paged-kv-cache --submission "$sub" --world-size 1 --format json > "$OUT/$name.json" 2> "$OUT/$name.log"
  echo "$name: exit $? in $((SECONDS - t0)) s"
  $PY -c 'import json,sys; r=json.load(open(sys.argv[1])); o=r["official"] or {}; g=r.get("gpuMemory") or {}; print(" verdict", r["verdict"], "| official limit", o.get("limit"), "| reason", o.get("reason"), "| GPU peak MiB official", round((g.get("official") or {}).get("peakBytes",0)/2**20), "probes", round(((g.get("probes") or {}).get("peakBytes") or 0)/2**20))' "$OUT/$name.json"
  nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits | sed "s/^/after $name: /"
done
