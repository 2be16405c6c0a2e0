#!/usr/bin/env bash
# The Megatron-LM DDP repository gate (tasks/megatron-ddp-gate) on the lent GPU machine: a few real PRs
# replayed (base = first parent, head = the merge) and the traffic and memory injections, with the probe's
# 2 data-parallel ranks on 2 GPUs over NCCL and the official tests as one CUDA rank.
#
# 1. On the dev box (PyPI and the Megatron-LM mirror are here, not on the device), once:
#      bash bench/gpu-megatron-gate.sh --make-bundle
#    writes .devnode/megatron-gate/: megatron.bundle, a git bundle of a synthetic repository with one
#    branch pr-<sha9> per replayed PR holding two commits (the PR's first parent, then its merge), each
#    with only what the gate reads: megatron/, tests/__init__.py, tests/unit_tests/, tests/test_utils/,
#    pyproject.toml and LICENSE (about 10-15 MB for the PRs below); and wheels/, the pure-Python wheels
#    the repository's tests/unit_tests/conftest.py imports beyond the device's torch, numpy, pytest and
#    packaging (click, requests and its four dependencies). .devnode/ is git-ignored: carry it.
# 2. On the device (nvidia-h200-x2: the probe needs 2 GPUs; torch 2.11, no PyPI, no GitHub):
#      bash bench/gpu-megatron-gate.sh [OUT]
#    makes a venv over the device's interpreter (--system-site-packages: its torch) with those wheels,
#    and evaluates through it (`probegate eval --python`); the task's pinned lock is not built there.
#    Writes OUT/runs/*.json (results and logs), OUT/replay.md, OUT/inject.md, OUT/facts.txt.
#    PACK_OUT=1: OUT ends as one .tgz (the device returns at most 8 files).
# Needs node (.devnode/node.gz) and bubblewrap (.devnode/bwrap) as bench/gpu-bootstrap.sh sets them up.
set -uo pipefail
cd "$(dirname "$0")/.."
DEV=.devnode/megatron-gate
# Replayed on the device (newest first): small, resolved on the dev box's CPU replay; the injections go
# on top of the first one.
# GATE_PRS / GATE_INJECT (space-separated) narrow them on the device (one command runs at most 10 min
# there: about 3-4 min an evaluation); the bundle holds the PRS below.
PRS=(dd8c825b3a 87cc590ba0 23b2ff22ee 88e7ab0918)
INJECT=(extra-collective leaked-buffer)
[ "${1:-}" != --make-bundle ] && [ -n "${GATE_PRS:-}" ] && read -r -a PRS <<< "$GATE_PRS"
[ -n "${GATE_INJECT+x}" ] && read -r -a INJECT <<< "$GATE_INJECT"

if [ "${1:-}" = --make-bundle ]; then
  MIRROR=${MEGATRON_MIRROR:-/work/.mirror/NVIDIA+Megatron-LM/repo}
  rm -rf "$DEV" && mkdir -p "$DEV/wheels"
  SYN=$(mktemp -d)
  git init -q "$SYN/repo"
  # The mirror's objects, borrowed (objects/info/alternates); the bundle below carries only what the
  # synthetic branches reach.
  echo "$(cd "$MIRROR" && pwd)/objects" > "$SYN/repo/.git/objects/info/alternates"
  KEEP='^(megatron/|tests/unit_tests/|tests/test_utils/|tests/__init__\.py$|pyproject\.toml$|LICENSE$)'
  for pr in "${PRS[@]}"; do
    head=$(git --git-dir "$MIRROR" rev-parse "$pr") base=$(git --git-dir "$MIRROR" rev-parse "$pr^1")
    subject=$(git --git-dir "$MIRROR" log -1 --format=%s "$head")
    parent=()
    for sha in "$base" "$head"; do
      # The commit's tree, pruned to what the gate reads (read-tree into a scratch index).
      export GIT_INDEX_FILE="$SYN/index"
      rm -f "$GIT_INDEX_FILE"
      git -C "$SYN/repo" read-tree "$sha"
      git -C "$SYN/repo" ls-files | grep -vE "$KEEP" | git -C "$SYN/repo" update-index --force-remove --stdin
      tree=$(git -C "$SYN/repo" write-tree)
      unset GIT_INDEX_FILE
      if [ "$sha" = "$base" ]; then msg="base of: $subject"$'\n\n'"upstream $base"; else msg="$subject"$'\n\n'"upstream $head"; fi
      c=$(GIT_AUTHOR_NAME=replay GIT_AUTHOR_EMAIL=replay@localhost GIT_COMMITTER_NAME=replay GIT_COMMITTER_EMAIL=replay@localhost \
          GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z" \
          git -C "$SYN/repo" commit-tree "$tree" "${parent[@]}" -m "$msg")
      parent=(-p "$c")
    done
    git -C "$SYN/repo" update-ref "refs/heads/pr-${pr:0:9}" "$c"
  done
  # Only the branches' objects: a fresh clone of the branches drops the fetched full commits.
  git clone -q --bare --no-local "$SYN/repo" "$SYN/slim.git"
  git -C "$SYN/slim.git" bundle create "$PWD/$DEV/megatron.bundle" --branches 2>/dev/null
  rm -rf "$SYN"
  # Pure-Python wheels (charset-normalizer's py3-none-any one), for any CPython 3 on the device.
  /usr/bin/python3 -m pip download -q --only-binary :all: --no-deps --platform any --python-version 3.12 --implementation py -d "$DEV/wheels" \
    click==8.5.1 requests==2.34.2 urllib3==2.8.0 idna==3.20 certifi==2026.10.19.post1 charset-normalizer==3.5.3
  du -sh "$DEV"/*
  exit 0
fi

OUT=${1:-${OUT:-out/gpu-megatron-gate}}
mkdir -p "$OUT"
. bench/gpu-bootstrap.sh
[ -f "$DEV/megatron.bundle" ] || { echo "gpu-megatron-gate: no $DEV/megatron.bundle: run 'bash bench/gpu-megatron-gate.sh --make-bundle' on the dev box and carry .devnode" >&2; exit 2; }
if ! $PY -c 'import torch, numpy, packaging, pytest; assert torch.cuda.device_count() >= 2, "fewer than 2 GPUs"' 2> "$OUT/deps.txt"; then
  echo "gpu-megatron-gate: $(tail -1 "$OUT/deps.txt") (the probe's 2 data-parallel ranks need 2 GPUs: use nvidia-h200-x2; and torch with CUDA, numpy, packaging, pytest)" >&2
  exit 2
fi
# The conftest's imports, from the carried wheels, in a venv that sees the device's torch.
VENV=$PWD/out/megatron-gate-venv
# --without-pip: the device's python may lack ensurepip; the wheels are pure Python, so unzipping them
# into the venv's site-packages installs them.
if [ ! -x "$VENV/bin/python" ]; then
  $PY -m venv --without-pip --system-site-packages "$VENV" \
    && SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') \
    && for w in "$DEV"/wheels/*.whl; do "$VENV/bin/python" -m zipfile -e "$w" "$SITE" || exit 2; done \
    || { echo "gpu-megatron-gate: could not make $VENV with click and requests from $DEV/wheels" >&2; exit 2; }
fi
"$VENV/bin/python" -c 'import sys, torch, click, requests; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count(), torch.cuda.get_device_name(0))' | tee "$OUT/facts.txt"
echo "sandbox: $SANDBOX" | tee -a "$OUT/facts.txt"
REPO=/tmp/megatron-gate-repo.git CLONE=/tmp/megatron-gate-clone
rm -rf "$REPO" "$CLONE"
git clone -q --bare "$DEV/megatron.bundle" "$REPO" && git clone -q "$DEV/megatron.bundle" "$CLONE"
tips=()
for pr in "${PRS[@]}"; do tips+=("$(git --git-dir "$REPO" rev-parse "pr-${pr:0:9}")"); done
export PROBEGATE_CLAIMS=/tmp/megatron-gate-claims
python3 bench/replay_gate.py --mirror "$REPO" --task tasks/megatron-ddp-gate --shas "${tips[@]}" --seed 1 \
  --out-dir "$OUT/runs" --table "$OUT/replay.md" --eval-args --python "$VENV/bin/python" --verbose $UNSB 2> "$OUT/replay.log"
cat "$OUT/replay.md"
specs=()
for name in "${INJECT[@]}"; do specs+=("$name@${tips[0]}"); done
[ ${#specs[@]} -gt 0 ] && python3 bench/replay_gate.py --mirror "$REPO" --task tasks/megatron-ddp-gate --inject "${specs[@]}" --clone "$CLONE" --seed 1 \
  --out-dir "$OUT/runs" --table "$OUT/inject.md" --eval-args --python "$VENV/bin/python" --verbose $UNSB 2> "$OUT/inject.log"
cat "$OUT/inject.md"
pack_out "$OUT"
