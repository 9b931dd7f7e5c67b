#!/usr/bin/env bash
# Downloads the pure-Python wheels the Python GPU tests need on a GPU machine
# without a package index (pytest and its dependencies; FLA's fla-core 0.5.2
# and einops, to compare kdajit.compat.chunk_kda with FLA) into
# build/gpu-wheels; scripts/gpu-tests.sh installs them from there. torch and
# Triton are the GPU machine's own.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KDAJIT_BUILD_DIR:-$root/build}"
dest="$build/gpu-wheels"
mkdir -p "$dest"
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --no-deps -d "$dest" \
  pytest iniconfig pluggy packaging pygments "fla-core==0.5.2" einops
ls "$dest"
