#!/usr/bin/env bash
# Runs the [gpu] test cases on a machine with a CUDA driver and a GPU (the H200
# test machine), using an existing build (scripts/build.sh on the development
# machine; copy build/ over), then `kdajit selftest --all` (each schedule the
# GPU runs in a child process, recorded in a scratch tuning table), then what
# else is built:
#   - the example host programs (scripts/build-examples.sh), against the
#     installed libkdajit.so;
#   - the Python package's tests, CPU and GPU, with torch from the machine
#     (the wheel from scripts/python-package.sh in build/wheels, pytest and
#     FLA from scripts/fetch-gpu-wheels.sh in build/gpu-wheels).
# --nvrtc12: with NVRTC 12.9 loaded instead (build/nvrtc12 from
# scripts/fetch-nvrtc12.sh, or its archive build/nvrtc12.tar.xz).
# --fla: only kdajit.compat.chunk_kda against FLA itself (pytest marker `fla`:
# FLA's Triton kernels compile first, a few minutes), nothing else.
# The kernels the [gpu] cases use (tests/gpu-kernels.txt) are first compiled
# into the disk cache in parallel, one `kdajit compile` per core, so that the
# cases load them instead of compiling them one at a time.
# A build packed by scripts/pack-gpu-build.sh (build/gpu-build.tar.xz) is
# unpacked first where build/ holds nothing else.
# Other arguments go to the test binary. Writes ${OUT:-.}/gpu-tests.log.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KDAJIT_BUILD_DIR:-$root/build}"
log="${OUT:-$root}/gpu-tests.log"
start=$(date +%s)
markers="not fla"
if [ "${1:-}" = "--fla" ]; then
  shift
  markers="fla"
fi
if [ "${1:-}" = "--nvrtc12" ]; then
  shift
  if [ ! -f "$build/nvrtc12/lib/libnvrtc.so.12" ] && [ -f "$build/nvrtc12.tar.xz" ]; then
    mkdir -p "$build/nvrtc12" && tar -C "$build/nvrtc12" -xJf "$build/nvrtc12.tar.xz"
  fi
  export KDAJIT_NVRTC_LIBRARY="$build/nvrtc12/lib/libnvrtc.so.12"
  echo "NVRTC: $KDAJIT_NVRTC_LIBRARY" | tee "$log"
else
  : > "$log"
fi
# a packed build (scripts/pack-gpu-build.sh) where the build itself is absent
if [ ! -e "$build/tests/kdajit_tests" ] && [ -f "$build/gpu-build.tar.xz" ]; then
  tar -C "$build" -xJf "$build/gpu-build.tar.xz"
fi
status=0
# the cases that run the CLI as a child process take this build's, wherever
# it was unpacked (the test binary's compiled-in path is the development
# machine's)
export KDAJIT_CLI="$build/tools/kdajit"
if [ "$markers" != "fla" ]; then
  warm=$(date +%s)
  grep -v '^#' "$root/tests/gpu-kernels.txt" |
    while read -r schedule target state layout checkpoints; do
      echo "--schedule $schedule --target $target --state $state --layout $layout${checkpoints:+ --checkpoints}"
    done | xargs -P "$(nproc)" -L 1 "$build/tools/kdajit" compile > "${log%.log}-compile.log" 2>&1 ||
    echo "warning: some kernels did not compile ahead (${log%.log}-compile.log); the cases compile them" | tee -a "$log"
  echo "kernels compiled ahead in $(( $(date +%s) - warm )) s" | tee -a "$log"
  KDAJIT_GPU_TESTS=1 "$build/tests/kdajit_tests" "[gpu]" --durations yes "$@" 2>&1 | tee -a "$log"
  status=${PIPESTATUS[0]}
fi
if [ "$markers" != "fla" ]; then
  # trust on first use: every schedule this GPU runs (the tcgen05 proxies
  # included), each in a child process, recorded in a scratch tuning table;
  # then the default run, which on the H200 has nothing left to check
  table=$(mktemp -d)/tuning.json
  KDAJIT_TUNE_FILE="$table" "$build/tools/kdajit" selftest --all --timeout 300 2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  KDAJIT_TUNE_FILE="$table" "$build/tools/kdajit" selftest 2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  grep -c '"pass": true' "$table" | sed 's/^/selftest records passing: /' | tee -a "$log"
  # a deliberately broken author's schedule (a wrong SMEM aliasing plan the
  # validator cannot see) must be recorded as failed, exit 8, the caller unharmed
  KDAJIT_SCHEDULE_PATH="$root/tests/schedules/broken_kr_over_qd.json" KDAJIT_TUNE_FILE="$table" \
    "$build/tools/kdajit" selftest --schedule broken_kr_over_qd 2>&1 | tee -a "$log"
  broken=${PIPESTATUS[0]}
  if [ "$broken" -eq 8 ] && python3 -c 'import json, sys
r = [x for x in json.load(open(sys.argv[1]))["selftests"] if x["schedule"] == "broken_kr_over_qd"]
sys.exit(0 if r and not any(x["pass"] for x in r) else 1)' "$table"; then
    echo "broken schedule: recorded as failed (exit 8)" | tee -a "$log"
  else
    echo "broken schedule: NOT recorded as failed (exit $broken)" | tee -a "$log"
    status=1
  fi
fi
if [ "$markers" != "fla" ] && [ -x "$build/examples/prefill_cpp" ] && [ -x "$build/examples/prefill_c" ]; then
  lib="$build/prefix/lib"
  [ -e "$lib/libkdajit.so.0" ] || ln -sf "$(basename "$(ls "$lib"/libkdajit.so.*.*.* | head -1)")" "$lib/libkdajit.so.0"
  for example in prefill_cpp prefill_c; do
    LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$build/examples/$example" 2>&1 | tee -a "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
fi
if ls "$build"/wheels/kdajit-*.whl > /dev/null 2>&1; then
  py="$build/python-gpu"
  rm -rf "$py"
  python3 -m pip install -q --no-index --no-deps --target "$py" "$build"/wheels/kdajit-*.whl \
    $(ls "$build"/gpu-wheels/*.whl 2> /dev/null) 2>&1 | tee -a "$log"
  (cd "$build" && PYTHONPATH="$py" python3 -m pytest -q -rs -s -p no:cacheprovider -m "$markers" "$root/python/tests") 2>&1 |
    tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
echo "gpu tests wall time: $(( $(date +%s) - start )) s (exit $status)" | tee -a "$log"
exit $status
