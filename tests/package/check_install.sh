#!/usr/bin/env bash
# Installs a build into a temporary prefix and uses it as a consumer would:
# libkdajit.so exports exactly the public API and the LLVM tier's table
# (kda_internal_tier0_api_v1; nothing of LLVM itself: exported_symbols.txt), a
# program built with find_package(kdajit) and one built with pkg-config catch
# kdajit's exceptions, and the examples build against the package.
#   check_install.sh <build dir> <source dir>
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
lib=$(find "$prefix" -name 'libkdajit.so.*.*.*' | head -1)
test -n "$lib" || { echo "no libkdajit.so.X.Y.Z installed"; exit 1; }
soname=$(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
echo "installed $(basename "$lib"), SONAME $soname"
test "$soname" = "libkdajit.so.0"
for f in include/kdajit/kda.hpp include/kdajit/kda_c.h bin/kdajit; do
  test -e "$prefix/$f" || { echo "missing $f"; exit 1; }
done
if grep -rn '#include "\(compiler\|runtime\|cache\)/' "$prefix/include"; then
  echo "public headers include internal paths"; exit 1
fi
# libgcc_s shared (one unwinder for the process), libstdc++ inside
readelf -d "$lib" | grep -q 'NEEDED.*libgcc_s' || { echo "libkdajit.so does not link libgcc_s"; exit 1; }
if readelf -d "$lib" | grep -q 'NEEDED.*libstdc++'; then echo "libkdajit.so links libstdc++ dynamically"; exit 1; fi

# exactly the public API
nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^KDAJIT_0$' | c++filt | sort > "$work/exported.txt"
if ! diff -u "$src/tests/package/exported_symbols.txt" "$work/exported.txt"; then
  echo "libkdajit.so exports differ from tests/package/exported_symbols.txt (+: exported now)"; exit 1
fi
echo "exports: $(wc -l < "$work/exported.txt") symbols, as listed"

# find_package(kdajit), no CUDA toolkit
cmake -S "$src/tests/package" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" > "$work/consumer.log"
cmake --build "$work/consumer" >> "$work/consumer.log"
"$work/consumer/consumer"

# pkg-config
pc_dir=$(dirname "$(find "$prefix" -name kdajit.pc | head -1)")
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs kdajit)
c++ -std=c++17 "$src/tests/package/consumer.cpp" $flags -Wl,-rpath,"$(dirname "$lib")" -o "$work/consumer_pc"
"$work/consumer_pc" > /dev/null
echo "pkg-config build: ok ($flags)"

# the examples (they need the CUDA toolkit for the driver API; built, run on a GPU machine)
cmake -S "$src/examples" -B "$work/examples" -DCMAKE_PREFIX_PATH="$prefix" > "$work/examples.log"
cmake --build "$work/examples" >> "$work/examples.log"
echo "examples built against the package: $(ls "$work/examples" | grep -c '^prefill_')"
