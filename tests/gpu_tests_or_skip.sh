#!/usr/bin/env bash
# The [gpu] test cases run only where a CUDA driver and a GPU are present, and
# only when asked (KDAJIT_GPU_TESTS=1, set by scripts/gpu-tests.sh). Anywhere
# else this entry exits 77, which ctest reports as skipped, never as passed.
set -u
tests_binary=$1
if [ "${KDAJIT_GPU_TESTS:-0}" != "1" ] || ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu tests skipped: no GPU here, or KDAJIT_GPU_TESTS is not 1 (run scripts/gpu-tests.sh on the GPU machine)"
  exit 77
fi
count=$("$tests_binary" "[gpu]" --list-test-names-only | grep -c . || true)
if [ "$count" = "0" ]; then
  echo "gpu tests skipped: this build has no [gpu] test cases yet"
  exit 77
fi
exec "$tests_binary" "[gpu]"
