#!/usr/bin/env bash
# Usage: torch_root_test.sh <source root>
# Builds ppe against a LibTorch laid out as pytorch.org's zip and PyTorch's wheel are
# (include/, include/torch/csrc/api/include, lib/), made here from the system's LibTorch as
# links, with -Dtorch_root and -Ddistributed=disabled, as a user of such a LibTorch without
# gloo's headers would. Checks that:
# - configuring says that distributed training is not built and defines none of its targets;
# - the manual_loop example builds, finds libtorch through the rpath into <root>/lib (not
#   the system's search path), and prints what it prints in the main build.
set -euo pipefail
src=$1
cxx=${CXX:-c++}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP   # so the EXIT trap also cleans up when meson test times out

# The zip layout, from the system's LibTorch: its headers under include/, its libraries
# under lib/.
api=$(find /usr/include -maxdepth 5 -type d -path '*/torch/csrc/api/include' -print -quit)
[[ -n $api ]] || { echo "FAIL: no LibTorch headers (torch/csrc/api/include) under /usr/include"; exit 1; }
sys_include=${api%/torch/csrc/api/include}
torch=$tmp/libtorch
mkdir -p "$torch/include" "$torch/lib"
for d in ATen c10 caffe2 torch; do
  [[ -e $sys_include/$d ]] && ln -s "$sys_include/$d" "$torch/include/$d"
done
for name in torch torch_cpu c10; do
  lib=$(find /usr/lib /usr/lib64 -name "lib$name.so" -print -quit 2>/dev/null)
  [[ -n $lib ]] || { echo "FAIL: lib$name.so not found under /usr/lib"; exit 1; }
  real=$(readlink -f "$lib")
  ln -s "$real" "$torch/lib/lib$name.so"
  # Debian's libraries carry versioned sonames (the zip's do not): programs look those up.
  soname=$(readelf -d "$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [[ -z $soname || $soname == "lib$name.so" ]] || ln -s "$real" "$torch/lib/$soname"
done
[[ -f $torch/include/torch/csrc/api/include/torch/torch.h ]] \
  || { echo "FAIL: the layout lacks include/torch/csrc/api/include/torch/torch.h"; exit 1; }

echo "== meson setup -Dtorch_root=$torch -Ddistributed=disabled"
CXX=$cxx meson setup "$tmp/build" "$src" -Dtorch_root="$torch" -Ddistributed=disabled -Dtests=false \
  -Dbenchmarks=false -Dheader_checks=false >"$tmp/setup.log" 2>&1 \
  || { cat "$tmp/setup.log"; echo "FAIL: meson setup"; exit 1; }
grep -q "Distributed training (ppe-distributed, its tests, the fashion_mnist example) is not built: -Ddistributed=disabled" \
  "$tmp/setup.log" || { cat "$tmp/setup.log"; echo "FAIL: configuring did not say that distributed training is off"; exit 1; }
targets=$(meson introspect --targets "$tmp/build" | python3 -c '
import json, sys
print(" ".join(sorted(t["name"] for t in json.load(sys.stdin))))')
echo "targets: $targets"
for t in ppe_distributed fashion_mnist; do
  [[ " $targets " != *" $t "* ]] || { echo "FAIL: target $t is defined without distributed training"; exit 1; }
done
for t in ppe_separate manual_loop; do
  [[ " $targets " == *" $t "* ]] || { echo "FAIL: target $t is missing"; exit 1; }
done

echo "== build and run manual_loop"
ninja -C "$tmp/build" -j "${PPE_TEST_JOBS:-2}" examples/manual_loop >/dev/null
exe=$tmp/build/examples/manual_loop
runpath=$(readelf -d "$exe" | grep -E 'RUNPATH|RPATH' || true)
[[ $runpath == *"$torch/lib"* ]] || { echo "FAIL: no rpath into $torch/lib: '$runpath'"; exit 1; }
loaded=$(LD_DEBUG=libs "$exe" --epochs 1 2>&1 >/dev/null | grep -m1 'calling init: .*libtorch_cpu.so' || true)
[[ $loaded == *"$torch/lib/libtorch_cpu.so"* ]] \
  || { echo "FAIL: libtorch_cpu.so was not loaded from $torch/lib: '$loaded'"; exit 1; }
(cd "$tmp" && python3 "$src/tests/support/check_output.py" "$src/examples/manual_loop/expected.txt" -- "$exe" \
  --epochs 5) || { echo "FAIL: manual_loop's output differs from examples/manual_loop/expected.txt"; exit 1; }
echo "ok"
