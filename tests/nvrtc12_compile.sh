#!/usr/bin/env bash
# usage: nvrtc12_compile.sh KDAJIT_TESTS KDAJIT_CLI BUILD_DIR
# Every shipped schedule's kernels compiled by NVRTC 12.9 (fetched by
# scripts/fetch-nvrtc12.sh into BUILD_DIR/nvrtc12; skipped, exit 77, without
# it), resources checked as with NVRTC 13. Cache entries are keyed by the NVRTC
# version, so these live beside the NVRTC 13 ones.
set -uo pipefail
tests=$1
cli=$2
lib="$3/nvrtc12/lib/libnvrtc.so.12"
if [ ! -f "$lib" ]; then
  echo "no NVRTC 12 in $3/nvrtc12 (scripts/fetch-nvrtc12.sh): skipped"
  exit 77
fi
export KDAJIT_NVRTC_LIBRARY="$lib"
"$cli" env | grep -q "^NVRTC: 12\.9 " || { echo "NVRTC 12.9 did not load:"; "$cli" env | head -3; exit 1; }
exec "$tests" "every generatable shipped schedule compiles with NVRTC for each of its targets"
