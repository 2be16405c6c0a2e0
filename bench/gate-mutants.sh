#!/usr/bin/env bash
# Gate power on mutants of the gated subsystem: validate --mutants on the verl core-algorithms gate,
# the mutants.yml of bench/gates/verl-core-algos-mutants/ (MUTANTS=mutants-all.yml for every operator)
# copied into a scratch copy of the task. Usage:
#   bench/gate-mutants.sh [--budget S] [--jobs N]   (VERL=<git repo holding b178a3cd5>)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
verl=${VERL:-/work/.mirror/volcengine+verl/repo}
scratch=$(mktemp -d /tmp/gate-mutants-XXXX)
mkdir -p "$scratch/tasks" "$scratch/probes"
cp -r "$here/tasks/verl-core-algos-gate" "$scratch/tasks/"
cp -r "$here/probes/verl-core-algos-gate" "$scratch/probes/"
cp "$here/bench/gates/verl-core-algos-mutants/${MUTANTS:-mutants.yml}" "$scratch/tasks/verl-core-algos-gate/mutants.yml"
node "$here/dist/cli/index.js" validate --mutants "$scratch/tasks/verl-core-algos-gate" --repo "$verl" \
  --cache "$here/.probegate/mutants" --format markdown "$@"
