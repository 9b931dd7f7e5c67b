#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest). The [gpu]
# tests appear as one skipped entry unless run on the GPU machine
# (scripts/gpu-tests.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KDAJIT_BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
KDAJIT_BUILD_DIR="$build" "$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j "$(nproc)"
