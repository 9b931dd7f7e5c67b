#!/usr/bin/env bash
# usage: python_cpu_tests.sh BUILD_DIR SOURCE_DIR
# The Python package's tests that need no GPU, in the virtual environment
# scripts/python-package.sh made (skipped, exit 77, when it has not run).
set -uo pipefail
build=$1
src=$2
if [ ! -x "$build/venv/bin/python" ] || ! "$build/venv/bin/python" -c "import kdajit" 2> /dev/null; then
  echo "no Python package installed in $build/venv (scripts/python-package.sh): skipped"
  exit 77
fi
cd "$build" # not the source tree: import the installed package
exec "$build/venv/bin/python" -m pytest -q -p no:cacheprovider -m "not gpu" "$src/python/tests"
