#!/usr/bin/env bash
# Packs what scripts/gpu-tests.sh runs into one archive, build/gpu-build.tar.xz,
# for a GPU machine that takes a limited number of bytes: the test binary, the
# CLI, libkdajit.so (which holds the LLVM tier), the install prefix, the
# examples and the wheels, as far as they are built (scripts/build.sh,
# scripts/build-examples.sh, scripts/python-package.sh,
# scripts/fetch-gpu-wheels.sh). The copies of libkdajit.so compress to one in
# a solid xz stream. scripts/gpu-tests.sh unpacks it where the build is absent.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KDAJIT_BUILD_DIR:-$root/build}"
cd "$build"
items=()
for item in tests/kdajit_tests tools/kdajit package/libkdajit.so package/libkdajit.so.0 \
            package/libkdajit.so.0.1.0 prefix examples/prefill_cpp examples/prefill_c wheels gpu-wheels; do
  [ -e "$item" ] && items+=("$item")
done
[ -e tests/kdajit_tests ] || { echo "pack-gpu-build: build the tests first (scripts/build.sh)" >&2; exit 1; }
tar -cf - "${items[@]}" | xz -T0 -6 > gpu-build.tar.xz.tmp
mv gpu-build.tar.xz.tmp gpu-build.tar.xz
echo "wrote $build/gpu-build.tar.xz ($(du -h gpu-build.tar.xz | cut -f1)): ${items[*]}"
