#!/usr/bin/env bash
# Builds the Python package's wheel (python/, scikit-build-core: CMake builds
# libkdajit.so into it) into build/wheels and installs it with pytest into the
# virtual environment build/venv, where ctest's python_package_cpu test runs
# the CPU tests. The wheel (cp310-abi3-linux_x86_64) also installs on the GPU
# machine's Python (scripts/gpu-tests.sh runs the GPU tests with it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KDAJIT_BUILD_DIR:-$root/build}"
venv="$build/venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip > /dev/null
"$venv/bin/python" -m pip install -q pytest
rm -rf "$build/wheels"
"$venv/bin/python" -m pip wheel -q --no-deps -w "$build/wheels" \
  -Cbuild-dir="$build/python-build" "$root/python"
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$build"/wheels/kdajit-*.whl
echo "python package: $(ls "$build"/wheels/kdajit-*.whl) installed in $venv"
