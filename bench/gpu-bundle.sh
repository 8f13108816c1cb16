#!/usr/bin/env bash
# bench/gpu-bundle.sh — prepare .gpu/ (ignored by git) to carry to a GPU machine: a release
# build made here, and the shared libraries it needs that a bare CUDA image may lack (GLib,
# json-glib, SQLite ...). The device tool then runs, with `.gpu` in carry:
#   LD_LIBRARY_PATH=$PWD/.gpu/lib bench/gpu.sh .gpu/build
# (libcuda, NVRTC, nvJitLink and CUPTI are the machine's own, found at run time.)
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .gpu
mkdir -p .gpu/lib
meson setup .gpu/build -Dbuildtype=release -Dopenblas=disabled >/dev/null
meson compile -C .gpu/build >/dev/null
for exe in .gpu/build/tools/tessera-tune .gpu/build/tools/tessera-perfgate .gpu/build/tests/test-*; do
  [ -f "$exe" ] && [ -x "$exe" ] || continue
  ldd "$exe" | awk '/=> \//{print $3}'
done | sort -u | grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" .gpu/lib/; done
du -sh .gpu | awk '{print "gpu-bundle: .gpu is " $1 " (the carry limit is 64 MiB)"}'
