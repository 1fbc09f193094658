#!/usr/bin/env bash
# Usage: consumer_test.sh <source root> <build dir>
# Installs the build into a temporary DESTDIR (no root needed) and checks that a downstream
# program builds and runs against that copy, once via CMake and once via pkg-config.
set -euo pipefail
src=$1 build=$2
cxx=${CXX:-c++}
consumer=$src/tests/install/cmake_consumer
expected='iterations=6 calls=2'

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP   # so the EXIT trap also cleans up when meson test times out
dest=$tmp/dest

# --no-rebuild: 'meson test' has built already, and ninja must not run inside a test.
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet

# The staged tree sits under <dest>/<prefix>; ask Meson where prefix, libdir and includedir
# point (relative to prefix unless configured outside it).
opts=$(meson introspect --buildoptions "$build" | python3 -c '
import json, sys
opts = {o["name"]: o["value"] for o in json.load(sys.stdin)}
print(opts["prefix"], opts["libdir"], opts["includedir"])')
read -r prefix libdir includedir <<<"$opts"
root=$dest$prefix
[[ $libdir == /* ]] && libdir=${libdir#"$prefix"/}
[[ $includedir == /* ]] && includedir=${includedir#"$prefix"/}

# Runs a consumer binary in a scratch directory (it writes consumer_result/) and checks it.
run_consumer() {
  local how=$1 exe=$2 out
  mkdir -p "$tmp/run_$how"
  out=$(cd "$tmp/run_$how" && "$exe") || { echo "FAIL ($how): $exe exited non-zero: $out"; exit 1; }
  [[ $out == "$expected" ]] || { echo "FAIL ($how): got '$out', want '$expected'"; exit 1; }
  echo "ok ($how): $out"
}

echo "== CMake: find_package(ppe) from $root"
# No build type: no optimisation, which cost the header-only consumer 13 s of 42
# and proves nothing about the installed files.
cmake -S "$consumer" -B "$tmp/cmake" -G Ninja -DCMAKE_BUILD_TYPE= \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$root"
# Guard against a ppe installed elsewhere on the system being picked up instead.
grep -qxF "ppe_DIR:PATH=$root/$libdir/cmake/ppe" "$tmp/cmake/CMakeCache.txt" \
  || { echo "FAIL (cmake): found $(grep '^ppe_DIR' "$tmp/cmake/CMakeCache.txt")"; exit 1; }
cmake --build "$tmp/cmake"
run_consumer cmake "$tmp/cmake/consumer"
run_consumer cmake-separate "$tmp/cmake/consumer_separate"

echo "== pkg-config: ppe.pc from $root/$libdir/pkgconfig"
# The .pc file names the real prefix; point it at the staged copy instead.
pc() { PKG_CONFIG_PATH=$root/$libdir/pkgconfig pkg-config --define-variable=prefix="$root" "$@"; }
cflags=$(pc --cflags ppe) libs=$(pc --libs ppe)
[[ $cflags == *"-I$root/$includedir"* ]] || { echo "FAIL (pkg-config): cflags '$cflags'"; exit 1; }
# Unquoted on purpose: the flags are separate words.
# shellcheck disable=SC2086
"$cxx" -std=c++20 $cflags "$consumer/main.cpp" -o "$tmp/consumer_pc" $libs
run_consumer pkg-config "$tmp/consumer_pc"

echo "== pkg-config: ppe-separate.pc (PPE_SEPARATE_COMPILATION, libppe_separate.a)"
cflags=$(pc --cflags ppe-separate) libs=$(pc --libs ppe-separate)
[[ $cflags == *-DPPE_SEPARATE_COMPILATION* && $libs == *-lppe_separate* ]] \
  || { echo "FAIL (pkg-config ppe-separate): cflags '$cflags', libs '$libs'"; exit 1; }
# shellcheck disable=SC2086
"$cxx" -std=c++20 $cflags "$consumer/main.cpp" -o "$tmp/consumer_pc_separate" $libs
run_consumer pkg-config-separate "$tmp/consumer_pc_separate"
