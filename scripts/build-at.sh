#!/usr/bin/env bash
# Builds the kdajit command line tool of another revision (a git worktree in
# a scratch folder, Release, the same toolchain) and copies it to
# build/kdajit_REV, for A/B rounds of two builds on one GPU:
#   scripts/build-at.sh ca117bf
#   scripts/device/bench-rounds.sh 3 CASES KDAJIT=build/kdajit_ca117bf,routed routed
# Usage: scripts/build-at.sh REV [SCRATCH]   (SCRATCH default /tmp/kdajit-at-REV)
set -euo pipefail
if [ $# -lt 1 ]; then
  awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
rev=$1
name=$(git -C "$root" rev-parse --short "$rev^{commit}")
scratch="${2:-/tmp/kdajit-at-$name}"
if [ ! -d "$scratch" ]; then
  git -C "$root" worktree add --detach "$scratch" "$name" >/dev/null
fi
cmake -S "$scratch" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/build" -j "$(nproc)" --target kdajit
mkdir -p "$root/build"
cp "$scratch/build/tools/kdajit" "$root/build/kdajit_$name"
echo "built $root/build/kdajit_$name ($(git -C "$root" log -1 --format='%h %cd' --date=short "$name"))"
