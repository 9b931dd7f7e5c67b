#!/usr/bin/env bash
# Runs the [gpu] test cases on a machine with a CUDA driver and a GPU (the H200
# test machine), using an existing build (scripts/build.sh on the development
# machine; copy build/ over). Writes the log to ${OUT:-.}/gpu-tests.log.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KDAJIT_BUILD_DIR:-$root/build}"
log="${OUT:-$root}/gpu-tests.log"
start=$(date +%s)
KDAJIT_GPU_TESTS=1 "$build/tests/kdajit_tests" "[gpu]" --durations yes "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
echo "gpu tests wall time: $(( $(date +%s) - start )) s (exit $status)" | tee -a "$log"
exit $status
