#!/usr/bin/env bash
# usage: check_driver_floor.sh KDAJIT_CLI FAKE_DRIVER_DIR
# Runs `kdajit env` against the stand-in libcuda.so.1 reporting CUDA 12.7,
# 12.8 and 13.0: 12.8 and 13.0 are accepted (the driver loads and reports no
# device), 12.7 is refused by name, and on the accepted ones every entry point
# resolves to the variant cuda.h declares (the fake's log says MISMATCH,
# NOT_SUFFICIENT or UNKNOWN otherwise). With a 12.x driver NVRTC 13 is passed
# over (its cubins would not load); a refused driver leaves kdajit compile-only,
# where any NVRTC serves.
set -uo pipefail
cli=$1
fake=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail=0
check() { # description, command...
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; fail=1; fi
}
run_env() { # version -> $scratch/env-<v>.txt, $scratch/log-<v>.txt
  FAKE_CUDA_DRIVER_VERSION=$1 FAKE_CUDA_LOG="$scratch/log-$1.txt" \
    LD_LIBRARY_PATH="$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$cli" env > "$scratch/env-$1.txt" 2>&1
}
for v in 12070 12080 13000; do
  run_env $v
  echo "--- driver $v:"; grep -E '^(NVRTC|driver):' "$scratch/env-$v.txt"
done
check "12.7 is refused by name" grep -q "driver: CUDA driver 12.7 is older than 12.8, the oldest kdajit supports" "$scratch/env-12070.txt"
for v in 12080 13000; do
  check "$v is accepted (loads, no device)" grep -q "driver: the CUDA driver reports no device" "$scratch/env-$v.txt"
  check "$v: every entry point requested" test "$(grep -c . "$scratch/log-$v.txt")" -ge 50
  check "$v: each at the variant cuda.h declares" bash -c "! grep -vE ' ok$' '$scratch/log-$v.txt'"
done
check "12.7 (refused: compile-only) still compiles with NVRTC 13" grep -q "^NVRTC: 13\." "$scratch/env-12070.txt"
check "on 12.7 cuEventElapsedTime would be another variant" grep -q "^cuEventElapsedTime .* MISMATCH" "$scratch/log-12070.txt"
check "on 13.0 cuCtxSynchronize is pinned to its cuda.h variant" grep -q "^cuCtxSynchronize requested=2000 got=2000" "$scratch/log-13000.txt"
# NVRTC with a 12.8 driver: never NVRTC 13
if grep -q "^NVRTC: 13\." "$scratch/env-12080.txt"; then
  echo "FAILED: a 12.8 driver was given NVRTC 13"; fail=1
else
  check "12.8: NVRTC 13 passed over or NVRTC 12 taken" \
    grep -qE "^NVRTC: (12\.|.*builds cubins the CUDA 12 driver cannot load)" "$scratch/env-12080.txt"
fi
# A bundle of NVRTC 13 cubins registered under a 12.8 driver: skipped, said once
printf '{"schedules": ["portable_c16"], "targets": ["sm_90"], "shapes": [{"state": "bf16", "layout": "fixed"}]}' \
  > "$scratch/plan.json"
if "$cli" aot build --plan "$scratch/plan.json" --out "$scratch/bundle" > /dev/null 2>&1; then
  FAKE_CUDA_DRIVER_VERSION=12080 KDAJIT_BUNDLE_PATH="$scratch/bundle/kdajit.kdab" \
    LD_LIBRARY_PATH="$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$cli" env > "$scratch/env-bundle.txt" 2>&1
  check "12.8: a bundle of NVRTC 13 cubins is skipped" \
    grep -q "built by NVRTC 13.0, whose cubins the CUDA 12 driver cannot load: skipped" "$scratch/env-bundle.txt"
else
  echo "FAILED: aot build of the test bundle"; fail=1
fi
exit $fail
