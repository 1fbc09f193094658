#!/usr/bin/env bash
# Usage: cmake_source_test.sh <source root>
# CMake users without Meson: two consumer projects (tests/install/cmake_source) take ppe from
# this checkout, one with add_subdirectory, one with FetchContent, find LibTorch with
# find_package(Torch) through ppe's CMakeLists.txt, build examples/features programs against
# ppe's targets and run them. Neither runs Meson nor installs anything.
set -euo pipefail
src=$(cd "$1" && pwd)
cxx=${CXX:-c++}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
declare -A expected=([core]='iterations=6 calls=2' [config]='epochs=3 yaml=- epoch: 1' [tensorboard]='event_files=1')

run() {
  local how=$1 program=$2 out
  mkdir -p "$tmp/run_${how}_$program"
  out=$(cd "$tmp/run_${how}_$program" && "$tmp/$how/$program") \
    || { echo "FAIL ($how): $program exited non-zero: $out"; exit 1; }
  [[ $out == "${expected[$program]}" ]] || { echo "FAIL ($how $program): got '$out', want '${expected[$program]}'"; exit 1; }
  echo "ok ($how $program): $out"
}

for how in subdirectory fetchcontent; do
  echo "== $how"
  # No build type: no optimisation (it proves nothing about the targets, and costs time).
  cmake -S "$src/tests/install/cmake_source/$how" -B "$tmp/$how" -G Ninja -DCMAKE_BUILD_TYPE= \
    -DCMAKE_CXX_COMPILER="$cxx" -DPPE_SOURCE_DIR="$src" >"$tmp/$how.configure.log" \
    || { cat "$tmp/$how.configure.log"; exit 1; }
  grep '^-- ppe ' "$tmp/$how.configure.log"
  cmake --build "$tmp/$how" -j 2
  programs=(core tensorboard)
  [[ $how == fetchcontent ]] && programs=(core config)
  for p in "${programs[@]}"; do run "$how" "$p"; done
done
