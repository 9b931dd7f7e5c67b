#!/usr/bin/env bash
# Installs an existing build (scripts/build.sh) into build/prefix and builds
# the example host programs against it into build/examples, for running on a
# GPU machine (scripts/gpu-tests.sh runs them when they are there). libstdc++
# is linked statically, as for every binary meant for the GPU host.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KDAJIT_BUILD_DIR:-$root/build}"
cmake --install "$build" --prefix "$build/prefix" > /dev/null
cmake -S "$root/examples" -B "$build/examples" -DCMAKE_PREFIX_PATH="$build/prefix" \
  -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++" > /dev/null
cmake --build "$build/examples" > /dev/null
echo "examples: $build/examples/prefill_cpp, $build/examples/prefill_c (libkdajit.so in $build/prefix/lib)"
