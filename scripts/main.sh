#!/usr/bin/env bash
# The main job: installs what is missing, builds, then checks and explains
# every shipped schedule for every target it names.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KDAJIT_BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
KDAJIT_BUILD_DIR="$build" "$root/scripts/build.sh" >/dev/null
kdajit="$build/tools/kdajit"

status=0
echo "== kdajit schedule check (every shipped schedule, every target it names)"
"$kdajit" schedule check "$root"/schedules/*.json || status=$?
for schedule in "$root"/schedules/*.json; do
  echo
  echo "== kdajit schedule explain $(basename "$schedule") (every target it names)"
  "$kdajit" schedule explain "$schedule" || status=$?
done
exit $status
