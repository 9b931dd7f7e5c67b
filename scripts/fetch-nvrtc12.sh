#!/usr/bin/env bash
# Fetches NVRTC 12.9 (the nvidia-cuda-nvrtc-cu12 wheel from PyPI) and unpacks
# its libraries into build/nvrtc12/lib, for the test that compiles every
# shipped schedule with NVRTC 12 (ctest: shipped_schedules_compile_with_nvrtc12)
# and for running the GPU tests with it (scripts/gpu-tests.sh --nvrtc12).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KDAJIT_BUILD_DIR:-$root/build}"
dest="$build/nvrtc12"
version="12.9.86"
[ -f "$dest/lib/libnvrtc.so.12" ] && [ "$(cat "$dest/version" 2>/dev/null)" = "$version" ] && exit 0
rm -rf "$dest" && mkdir -p "$dest/download"
python3 -m pip download -q --no-deps -d "$dest/download" "nvidia-cuda-nvrtc-cu12==$version"
python3 - "$dest" <<'PY'
import glob, os, sys, zipfile
dest = sys.argv[1]
wheel = glob.glob(os.path.join(dest, "download", "*.whl"))[0]
os.makedirs(os.path.join(dest, "lib"), exist_ok=True)
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        base = os.path.basename(name)
        if name.startswith("nvidia/cuda_nvrtc/lib/") and ".alt." not in base:
            with z.open(name) as src, open(os.path.join(dest, "lib", base), "wb") as out:
                out.write(src.read())
PY
rm -rf "$dest/download"
echo "$version" > "$dest/version"
echo "NVRTC $version: $dest/lib"
