#!/usr/bin/env bash
# Runs the [gpu] test cases on a machine with a CUDA driver and a GPU (the H200
# test machine), using an existing build (scripts/build.sh on the development
# machine; copy build/ over), and the example programs when
# scripts/build-examples.sh has built them. Writes the log to
# ${OUT:-.}/gpu-tests.log.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KDAJIT_BUILD_DIR:-$root/build}"
log="${OUT:-$root}/gpu-tests.log"
start=$(date +%s)
KDAJIT_GPU_TESTS=1 "$build/tests/kdajit_tests" "[gpu]" --durations yes "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# The example host programs, when built (scripts/build-examples.sh), against
# the installed libkdajit.so.
if [ -x "$build/examples/prefill_cpp" ] && [ -x "$build/examples/prefill_c" ]; then
  lib="$build/prefix/lib"
  [ -e "$lib/libkdajit.so.0" ] || ln -sf "$(basename "$(ls "$lib"/libkdajit.so.*.*.* | head -1)")" "$lib/libkdajit.so.0"
  for example in prefill_cpp prefill_c; do
    LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$build/examples/$example" 2>&1 | tee -a "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
fi
echo "gpu tests wall time: $(( $(date +%s) - start )) s (exit $status)" | tee -a "$log"
exit $status
