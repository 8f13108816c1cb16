#!/usr/bin/env bash
# bench/gpu-bundle.sh — prepares .gpu/, the one folder carried to a lent GPU machine (it is
# ignored by git; the tracked tree travels anyway): the binaries bench/gpu.sh runs, from a
# release build made here, and the shared libraries they need that a CUDA image may lack (GLib,
# json-glib, SQLite, XGBoost ...), never the base system's (libc, libstdc++, libgcc_s, libz,
# libexpat, libffi ...), which the image has and which must match its own loader. Every binary
# and library gets the rpath $ORIGIN/../lib resp. $ORIGIN (DT_RPATH, which also serves the
# libraries' own dependencies), so nothing exports LD_LIBRARY_PATH and the image's own library
# path (where its libcuda is found) stays as it is. Binaries and libraries are stripped.
# .gpu/COMMIT names the commit built. The size of everything that travels is printed against
# the 64 MiB the machine accepts (the target is 32 MiB, half of it).
#
# Usage: bench/gpu-bundle.sh [--from BUILD_DIR] [--dest DIR]
#   --from BUILD_DIR  take the binaries from an existing build instead of configuring and
#                     building build-gpu/ (release, no GUI)
#   --dest DIR        write the bundle there instead of .gpu (the rehearsal test does)
# Then, on the GPU machine (docs/gpu.md): bench/gpu.sh --phase 1|2|3, with .gpu carried.
set -euo pipefail
cd "$(dirname "$0")/.."

FROM="" DEST=.gpu
while [ $# -gt 0 ]; do
  case $1 in
    --from) FROM=${2:?}; shift 2 ;;
    --dest) DEST=${2:?}; shift 2 ;;
    *) echo "usage: bench/gpu-bundle.sh [--from BUILD_DIR] [--dest DIR]" >&2; exit 2 ;;
  esac
done
for tool in patchelf strip readelf ldd; do
  command -v "$tool" >/dev/null || { echo "gpu-bundle: $tool is missing (apt-get install patchelf binutils)" >&2; exit 2; }
done

# What bench/gpu.sh runs, by build-directory path.
TARGETS=(tools/tessera-tune tests/test-cuda tests/test-cuda-ops tests/test-prof-metrics
         bench/cublas_gemm bench/cuda_copy bench/profile_overhead)

if [ -z "$FROM" ]; then
  FROM=build-gpu
  [ -f "$FROM/build.ninja" ] ||
    meson setup "$FROM" -Dbuildtype=release -Dgui=disabled -Dopenblas=disabled >/dev/null
  meson compile -C "$FROM" "${TARGETS[@]/#/}" >/dev/null
fi

# The base system: present on every image, tied to its loader and C++ runtime. Carrying one
# would shadow the image's own (a libstdc++ older than its torch needs, a libc that does not
# match its ld.so). The rehearsal test checks that none of these is ever in the bundle.
BASE='^(linux-vdso|ld-linux[^/]*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libz|libexpat|libffi|libpcre2-[0-9]+|libmount|libblkid|libselinux|libuuid|libcrypt|liblzma|libbz2|libzstd|libcap|libsystemd)\.so'

rm -rf "$DEST"
mkdir -p "$DEST/bin" "$DEST/lib"
for t in "${TARGETS[@]}"; do
  [ -x "$FROM/$t" ] || { echo "gpu-bundle: $FROM/$t was not built (a build without CUDA headers?)" >&2; exit 1; }
  cp "$FROM/$t" "$DEST/bin/"
done
for b in "$DEST"/bin/*; do
  ldd "$b" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  name=$(basename "$lib")
  if ! [[ $name =~ $BASE ]]; then cp -L "$lib" "$DEST/lib/$name"; fi
done
strip --strip-unneeded "$DEST"/lib/*.so* 2>/dev/null || true
strip "$DEST"/bin/*
for f in "$DEST"/lib/*.so*; do patchelf --force-rpath --set-rpath '$ORIGIN' "$f"; done
for f in "$DEST"/bin/*; do patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$f"; done

commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain --untracked-files=no 2>/dev/null | wc -l)
[ "$dirty" -eq 0 ] || commit="$commit + $dirty uncommitted changes"
echo "$commit, bundled $(date -u '+%Y-%m-%d %H:%M UTC')" >"$DEST/COMMIT"

# What travels: the bundle, the tracked files and the untracked ones git does not ignore.
bundle=$(du -sb "$DEST" | cut -f1)
tree=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } |
        xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
total=$((bundle + tree))
echo "gpu-bundle: $DEST: $(ls "$DEST/bin" | wc -l) binaries, $(ls "$DEST/lib" | wc -l) libraries ($(ls "$DEST/lib" | tr '\n' ' '))"
echo "gpu-bundle: carried $(mib "$total") of 64 MiB (bundle $(mib "$bundle"), tree $(mib "$tree")); target 32 MiB"
[ "$total" -le $((64 << 20)) ] || { echo "gpu-bundle: over the 64 MiB the GPU machine accepts" >&2; exit 1; }
