# Sourced by the bench/gpu-*.sh scripts: what every call on the lent GPU machine sets up first.
#  - node: that machine has none; the dev box's node binary travels as .devnode/node.xz (or .gz).
#  - PROBEGATE_PYTHON: the interpreter that has torch, as an absolute path (inside a job PATH is
#    /usr/local/bin:/usr/bin:/bin, where a bare python3 may be another interpreter without pytest).
#  - PROBEGATE_BWRAP: bubblewrap carried as .devnode/bwrap where the machine has none.
#  - SANDBOX_ARGS: (--unsandboxed) where there is no bubblewrap at all, else empty; SANDBOX says which.
# Sets NODE and PY too.
if ! command -v node >/dev/null; then
  mkdir -p /tmp/devnode/bin
  if [ -f .devnode/node.xz ]; then   # xz: 23 MB against gzip's 36 MB of the 64 MiB a call carries
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
      .devnode/node.xz /tmp/devnode/bin/node
  else
    gunzip -c .devnode/node.gz > /tmp/devnode/bin/node
  fi
  chmod +x /tmp/devnode/bin/node
  export PATH=/tmp/devnode/bin:$PATH
fi
NODE=$(command -v node)
PY=${PROBEGATE_PYTHON:-/usr/bin/python3}
"$PY" -c "import torch" 2>/dev/null || PY=python3
PY=$(command -v "$PY")
export PROBEGATE_PYTHON=$PY
SANDBOX=sandboxed
SANDBOX_ARGS=()
if [ -z "${PROBEGATE_BWRAP:-}" ] && ! command -v bwrap >/dev/null; then
  if [ -f .devnode/bwrap ]; then
    mkdir -p /tmp/devnode/bin && cp .devnode/bwrap /tmp/devnode/bin/bwrap && chmod 755 /tmp/devnode/bin/bwrap
    export PROBEGATE_BWRAP=/tmp/devnode/bin/bwrap
  else
    SANDBOX=unsandboxed
    SANDBOX_ARGS=(--unsandboxed)
    echo "no bubblewrap here: evaluations run --unsandboxed" >&2
  fi
fi
# A bwrap found only through this shell's PATH (the copy a warm machine kept in /tmp/devnode/bin) is
# named by its absolute path: jobs run it with PATH=/usr/local/bin:/usr/bin:/bin.
if [ -z "${PROBEGATE_BWRAP:-}" ] && [ "$SANDBOX" = sandboxed ]; then export PROBEGATE_BWRAP=$(command -v bwrap); fi

# The device returns at most 8 files from $OUT: with PACK_OUT=1 a script ends by packing its output
# folder into one archive beside it (and removing the folder), so nothing is left behind.
pack_out() {
  [ "${PACK_OUT:-0}" = 1 ] || return 0
  local dir=$1
  tar czf "$dir.tgz" -C "$(dirname "$dir")" "$(basename "$dir")" && rm -rf "$dir" && echo "packed $dir into $dir.tgz" >&2
}
