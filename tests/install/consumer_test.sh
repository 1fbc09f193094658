#!/usr/bin/env bash
# Usage: consumer_test.sh <source root> <build dir> <features>
# Installs the build into a temporary DESTDIR (no root needed) and checks that downstream
# programs build and run against that copy through every CMake target and every pkg-config
# file: the programs of examples/features, the core (core.cpp) and each optional feature
# (<feature>.cpp), header-only and with separate compilation, each linking only what it names.
set -euo pipefail
src=$1 build=$2
# The optional features this build made, as Meson knows them (comma-separated; distributed
# where c10d's Gloo headers were found): each must have its program and be consumed.
IFS=, read -r -a features <<<"$3"
cxx=${CXX:-c++}
consumer=$src/tests/install/cmake_consumer
programs=$src/examples/features
# What each program prints.
declare -A expected=([core]='iterations=6 calls=2' [config]='epochs=3 yaml=- epoch: 1' [plot]='plot=written'
                     [tensorboard]='event_files=1' [distributed]='initialized=0 world_size=1')
for f in core "${features[@]}"; do
  [[ -f $programs/$f.cpp && -n ${expected[$f]:-} ]] \
    || { echo "FAIL: the feature '$f' has no consumer program ($programs/$f.cpp) or expected output"; exit 1; }
done
# A program of examples/features whose feature this build lacks is said, not skipped silently.
for p in "$programs"/*.cpp; do
  f=$(basename "$p" .cpp)
  [[ $f == core || " ${features[*]} " == *" $f "* ]] || echo "not consumed: $p (this build has no '$f' feature)"
done

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

# Runs the consumer of `feature` in a scratch directory (it writes files there) and checks
# what it printed.
run_consumer() {
  local how=$1 feature=$2 exe=$3 out
  mkdir -p "$tmp/run_$how"
  out=$(cd "$tmp/run_$how" && "$exe") || { echo "FAIL ($how): $exe exited non-zero: $out"; exit 1; }
  [[ $out == "${expected[$feature]}" ]] || { echo "FAIL ($how): got '$out', want '${expected[$feature]}'"; exit 1; }
  echo "ok ($how): $out"
}

echo "== CMake: find_package(ppe COMPONENTS ${features[*]}) from $root"
# No build type: no optimisation, which cost the header-only consumer 13 s of 42
# and proves nothing about the installed files.
cmake -S "$consumer" -B "$tmp/cmake" -G Ninja -DCMAKE_BUILD_TYPE= \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$root" -DPPE_CONSUMER_FEATURES="$(IFS=";"; echo "${features[*]}")" -DPPE_FEATURE_EXAMPLES="$programs"
# Guard against a ppe installed elsewhere on the system being picked up instead.
grep -qxF "ppe_DIR:PATH=$root/$libdir/cmake/ppe" "$tmp/cmake/CMakeCache.txt" \
  || { echo "FAIL (cmake): found $(grep '^ppe_DIR' "$tmp/cmake/CMakeCache.txt")"; exit 1; }
cmake --build "$tmp/cmake" -j 2
run_consumer cmake core "$tmp/cmake/consumer"
run_consumer cmake-separate core "$tmp/cmake/consumer_separate"
for f in "${features[@]}"; do
  run_consumer "cmake-$f" "$f" "$tmp/cmake/consumer_$f"
  run_consumer "cmake-$f-separate" "$f" "$tmp/cmake/consumer_${f}_separate"
done

echo "== pkg-config: a .pc file per target, from $root/$libdir/pkgconfig"
# The .pc file names the real prefix; point it at the staged copy instead.
pc() { PKG_CONFIG_PATH=$root/$libdir/pkgconfig pkg-config --define-variable=prefix="$root" "$@"; }
# The core names LibTorch, and no optional feature's library.
libs=$(pc --libs ppe-separate)
[[ $libs != *yaml* && $libs != *plplot* && $libs != *ppe_config* && $libs != *ppe_plot* ]] \
  || { echo "FAIL (pkg-config ppe-separate): links an optional feature: '$libs'"; exit 1; }
# Compiles and runs the consumer of `feature` (source $2) with the .pc file $3.
build_with_pc() {
  local feature=$1 source=$2 package=$3 cflags libs
  cflags=$(pc --cflags "$package") libs=$(pc --libs "$package")
  [[ $cflags == *"-I$root/$includedir"* ]] || { echo "FAIL (pkg-config $package): cflags '$cflags'"; exit 1; }
  if [[ $package == *-separate ]]; then
    [[ $cflags == *-DPPE_SEPARATE_COMPILATION* && $libs == *-lppe_separate* ]] \
      || { echo "FAIL (pkg-config $package): cflags '$cflags', libs '$libs'"; exit 1; }
  fi
  # Unquoted on purpose: the flags are separate words.
  # shellcheck disable=SC2086
  "$cxx" -std=c++20 $cflags "$programs/$source" -o "$tmp/consumer_pc_$package" $libs
  run_consumer "pkg-config-$package" "$feature" "$tmp/consumer_pc_$package"
}
build_with_pc core core.cpp ppe &
build_with_pc core core.cpp ppe-separate
wait $! || exit 1
for f in "${features[@]}"; do
  build_with_pc "$f" "$f.cpp" "ppe-$f" &
  build_with_pc "$f" "$f.cpp" "ppe-$f-separate"
  wait $! || exit 1
done
