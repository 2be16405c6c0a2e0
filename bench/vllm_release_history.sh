#!/usr/bin/env bash
# Builds a local git history of vLLM from its PyPI source distributions, one commit per release.
#
# Why: vLLM's git history cannot be brought onto the dev box (the mirror is 1.12 GB, over the fetch
# limit), but every release's sdist is on PyPI. Committing consecutive releases' sdists one after
# the other gives a real, linear history of merged upstream code at *release granularity*: each
# commit is several upstream PRs at once (what changed between two releases), not one PR.
# The replay of tasks/vllm-block-pool-gate (bench/vllm_gate_replay.py) uses its consecutive commits
# as base -> head pairs.
#
#   bash bench/vllm_release_history.sh [SDIST_DIR] [REPO_DIR] [FIRST] [LAST]
#   (defaults: /work/src/vllm-sdists /work/src/vllm-history 0.8.0 0.34.0)
#
# Reproducible: the release list and each sdist's sha256 come from PyPI's JSON API (checked after
# download), every commit has a fixed author and the sdist's upload time as its date, so two runs
# give the same SHAs. Each commit keeps the sdist's LICENSE (Apache-2.0) at the root.
set -euo pipefail
SDISTS=${1:-/work/src/vllm-sdists}
REPO=${2:-/work/src/vllm-history}
FIRST=${3:-0.8.0}
LAST=${4:-0.34.0}
mkdir -p "$SDISTS"
PY=/usr/bin/python3

# 1. The releases FIRST..LAST that have an sdist: "version url sha256 upload_time", oldest first.
curl -sS --fail --max-time 120 https://pypi.org/pypi/vllm/json -o "$SDISTS/vllm.json"
"$PY" - "$SDISTS/vllm.json" "$FIRST" "$LAST" > "$SDISTS/releases.txt" <<'PYEOF'
import json, sys
from urllib.parse import urljoin
from packaging.version import Version
d = json.load(open(sys.argv[1]))
lo, hi = Version(sys.argv[2]), Version(sys.argv[3])
for v in sorted((v for v in d["releases"] if not Version(v).is_prerelease and lo <= Version(v) <= hi), key=Version):
    s = [f for f in d["releases"][v] if f["packagetype"] == "sdist" and not f.get("yanked")]
    if not s:
        print(f"# {v}: no sdist on PyPI, skipped", file=sys.stderr)
        continue
    f = s[0]
    print(v, urljoin("https://pypi.org/pypi/vllm/json", f["url"]), f["digests"]["sha256"], f["upload_time"])
PYEOF

# 2. Download (once) and check each sdist.
while read -r v url sha _; do
  f="$SDISTS/vllm-$v.tar.gz"
  if [ ! -f "$f" ] || ! echo "$sha  $f" | sha256sum -c --quiet - 2>/dev/null; then
    curl -sS --fail -L --max-time 600 -o "$f.part" "$url"
    echo "$sha  $f.part" | sha256sum -c --quiet -
    mv "$f.part" "$f"
  fi
done < "$SDISTS/releases.txt"

# 3. One commit per release, oldest first.
rm -rf "$REPO"; git init -q -b main "$REPO"
export GIT_AUTHOR_NAME="vLLM release (PyPI sdist)" GIT_AUTHOR_EMAIL="vllm-sdist@probegate.invalid"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
while read -r v url sha uploaded; do
  find "$REPO" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
  tar -xzf "$SDISTS/vllm-$v.tar.gz" -C "$REPO" --strip-components=1
  rm -f "$REPO/PKG-INFO"  # sdist metadata, not repository content (changes every release)
  git -C "$REPO" add -A -f .
  export GIT_AUTHOR_DATE="${uploaded}Z" GIT_COMMITTER_DATE="${uploaded}Z"
  git -C "$REPO" commit -q -m "vLLM $v (PyPI sdist vllm-$v.tar.gz, sha256 $sha)" \
    -m "Release-granularity history: this commit is every upstream change merged between the previous release and $v."
  git -C "$REPO" tag -f "v$v" >/dev/null
  echo "v$v $(git -C "$REPO" rev-parse HEAD)"
done < "$SDISTS/releases.txt"
