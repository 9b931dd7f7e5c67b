#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz (built by scripts/sanitize.sh into
# build-asan/) on their seed corpora: fuzz_schedule on the shipped and the
# bad schedules, fuzz_cache_readers on a bundle, a manifest and a JSON
# document (tests/fuzz/write_seeds). --runs N inputs per target (default
# 60000: CI); `scripts/fuzz.sh --runs 1000000` is the long run. New inputs
# go to a temporary corpus; a crash leaves its input in build-asan/fuzz-findings.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KDAJIT_ASAN_BUILD_DIR:-$root/build-asan}"
runs=60000
if [ "${1:-}" = "--runs" ]; then
  runs="$2"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/schedule" "$work/cache_readers" "$build/fuzz-findings"
cp "$root"/schedules/*.json "$root"/tests/schedules/bad/*.json "$work/schedule/"
"$build/tests/fuzz/write_seeds" "$work/cache_readers"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
total=0
for target in schedule cache_readers; do
  t0=$(date +%s)
  "$build/tests/fuzz/fuzz_$target" -runs="$runs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$build/fuzz-findings/$target-" -print_final_stats=1 "$work/$target" \
    > "$work/$target.log" 2>&1 || { tail -40 "$work/$target.log"; echo "fuzz_$target: FAILED"; exit 1; }
  done_runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$target.log" | grep -o '[0-9]*$')
  total=$(( total + done_runs ))
  echo "fuzz_$target: $done_runs inputs in $(( $(date +%s) - t0 )) s, no crash ($(grep -c . "$work/$target/"* 2>/dev/null | wc -l) corpus files)"
done
echo "fuzzing: $total inputs in total, no crash"
