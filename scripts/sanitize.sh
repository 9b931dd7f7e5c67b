#!/usr/bin/env bash
# The host code under AddressSanitizer and UndefinedBehaviorSanitizer: builds
# kdajit's libraries, the CLI, the test binary and the fuzz targets with
# clang into build-asan/ (KDAJIT_FUZZ=ON), runs every CPU test case (the
# [gpu] ones need the GPU machine) and then each fuzz target for a bounded
# number of inputs (scripts/fuzz.sh). Any sanitizer report fails the run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KDAJIT_ASAN_BUILD_DIR:-$root/build-asan}"
start=$(date +%s)
# -O1 with line tables: readable reports at a fraction of a debug build's compile time
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" -DKDAJIT_FUZZ=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target kdajit_tests kdajit fuzz_schedule fuzz_cache_readers write_seeds
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
# leaks inside vendor libraries only (the file says which and why)
export LSAN_OPTIONS="suppressions=$root/scripts/lsan-suppressions.txt"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
KDAJIT_CACHE_DIR="$build/test-kernel-cache" "$build/tests/kdajit_tests" "~[gpu]" --order lex
echo "sanitized CPU tests: $(( $(date +%s) - start )) s"
KDAJIT_ASAN_BUILD_DIR="$build" "$root/scripts/fuzz.sh" "$@"
