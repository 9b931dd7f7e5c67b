#!/usr/bin/env bash
# Interleaved rounds of `kdajit bench` for several variants on one GPU: the way
# docs/bench/CURRENT.md compares builds and schedules (rounds of each variant
# in turn on one instance, never against a table from another day), then the
# median of each case per variant and round.
# Usage: scripts/device/bench-rounds.sh ROUNDS CASES VARIANT...
#   CASES    bench cases, comma-separated (kdajit bench --cases)
#   VARIANT  a schedule name, or "routed", optionally preceded by
#            environment settings, comma-separated; KDAJIT=PATH there runs
#            another build (an A/B of two binaries):
#            sm90_wgmma_c32  KDAJIT_PREPARE_STREAMS=48,sm90_wgmma_c32_split
#            KDAJIT=build/tools/kdajit_base,routed
# Environment: KDAJIT (the binary, default build/tools/kdajit), OUT (where
# bench-rounds.log goes, default the current folder), BENCH_ARGS (more
# arguments for every bench, e.g. "--iters 50").
set -euo pipefail
if [ $# -lt 3 ]; then
  awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"
  exit 2
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
kdajit="${KDAJIT:-$root/build/tools/kdajit}"
rounds=$1 cases=$2
shift 2
log="${OUT:-.}/bench-rounds.log"
: > "$log"
for ((r = 1; r <= rounds; ++r)); do
  for variant in "$@"; do
    settings=() schedule="" binary="$kdajit"
    IFS=',' read -ra parts <<< "$variant"
    for part in "${parts[@]}"; do
      case "$part" in
        KDAJIT=*) binary="${part#KDAJIT=}" ;;
        *=*) settings+=("$part") ;;
        *) schedule="$part" ;;
      esac
    done
    args=(bench --cases "$cases")
    [ "$schedule" != "routed" ] && [ -n "$schedule" ] && args+=(--schedule "$schedule")
    # shellcheck disable=SC2206
    args+=(${BENCH_ARGS:-})
    echo "=== round $r variant $variant" >> "$log"
    env "${settings[@]}" "$binary" "${args[@]}" >> "$log" 2>&1
  done
done
python3 - "$log" "$cases" <<'PY'
import sys
log, cases = sys.argv[1], sys.argv[2].split(",")
table = {}  # (variant, case) -> [median per round]
variant = None
for line in open(log):
    if line.startswith("=== round "):
        variant = line.split(" variant ", 1)[1].strip()
        continue
    fields = line.split()
    if len(fields) > 2 and fields[0] in cases:
        try:
            table.setdefault((variant, fields[0]), []).append(float(fields[1]))
        except ValueError:
            pass
variants = list(dict.fromkeys(v for v, _ in table))
width = max([len(v) for v in variants] + [7])
print(f"{'variant':<{width}}  " + "  ".join(f"{c:>24}" for c in cases))
for v in variants:
    cells = ["/".join(f"{m:.3f}" for m in table.get((v, c), [])) or "-" for c in cases]
    print(f"{v:<{width}}  " + "  ".join(f"{cell:>24}" for cell in cells))
print(f"(median ms of each round; raw output: {log})")
PY
