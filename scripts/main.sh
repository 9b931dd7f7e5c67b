#!/usr/bin/env bash
# The main job: installs what is missing and builds; checks and explains every
# shipped schedule for every target it names; compiles the shipped schedules
# that have a code generator for all their targets into the kernel cache and
# lists the cache entries; on a machine with a GPU, runs one call and verifies
# it against the CPU fp64 reference.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KDAJIT_BUILD_DIR:-$root/build}"
if [ "${KDAJIT_SKIP_BUILD:-0}" != "1" ]; then
  "$root/scripts/install-deps.sh"
  KDAJIT_BUILD_DIR="$build" "$root/scripts/build.sh" >/dev/null
fi
kdajit="$build/tools/kdajit"

status=0
echo "== kdajit schedule check (every shipped schedule, every target it names)"
"$kdajit" schedule check "$root"/schedules/*.json || status=$?
for schedule in "$root"/schedules/*.json; do
  echo
  echo "== kdajit schedule explain $(basename "$schedule") (every target it names)"
  "$kdajit" schedule explain "$schedule" || status=$?
done
echo
echo "== kdajit compile --all (NVRTC; one shape key per schedule and target)"
"$kdajit" compile --all || status=$?
echo
echo "== kdajit cache ls"
"$kdajit" cache ls || status=$?
echo
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "== kdajit route (this GPU) and kdajit verify (one call against the CPU reference)"
  "$kdajit" route || status=$?
  "$kdajit" verify || status=$?
else
  echo "== no GPU here: the run-and-verify step is skipped (it runs on a machine with a GPU)"
fi
exit $status
