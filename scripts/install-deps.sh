#!/usr/bin/env bash
# Installs the Debian packages kdajit builds with, if any is missing:
# cmake, g++, make, fmt (used header-only), nlohmann-json, Catch2 v2,
# pkg-config and binutils (the installed-package test), python3-venv and
# python3-dev (the Python package; pip fetches scikit-build-core and pytest),
# clang-14 and libclang-rt-14-dev (the sanitizer build and libFuzzer),
# llvm-19-dev and libzstd-dev (the LLVM tier's IR emission and NVPTX code
# generation, linked statically; LLVM's CMake package needs zstd).
# The CUDA 13 toolkit is expected in its standard location (apt cannot install
# it); CMake's FindCUDAToolkit locates it for headers only.
set -euo pipefail

packages=(cmake g++ make libfmt-dev nlohmann-json3-dev catch2 pkgconf binutils python3-venv python3-dev clang-14
          libclang-rt-14-dev llvm-19-dev libzstd-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -e /usr/local/cuda/include/nvrtc.h ] && ! command -v nvcc >/dev/null 2>&1; then
  echo "warning: no CUDA toolkit found in /usr/local/cuda or on PATH; CMake will fail to find CUDAToolkit" >&2
fi
