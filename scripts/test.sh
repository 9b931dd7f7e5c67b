#!/usr/bin/env bash
# Installs what is missing, builds (the library, the CLI, the tests and the
# Python package's wheel into build/venv), and runs every test (ctest). The [gpu]
# tests appear as one skipped entry unless run on the GPU machine
# (scripts/gpu-tests.sh). Then the CPU tests again under ASan and UBSan and the
# fuzz targets (scripts/sanitize.sh, build-asan/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KDAJIT_BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
KDAJIT_BUILD_DIR="$build" "$root/scripts/build.sh"
KDAJIT_BUILD_DIR="$build" "$root/scripts/python-package.sh"
KDAJIT_BUILD_DIR="$build" "$root/scripts/fetch-nvrtc12.sh"
(cd "$build" && ctest --output-on-failure -j "$(nproc)")
"$root/scripts/sanitize.sh"
